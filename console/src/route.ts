// Every view's state lives in the URL: #/<page>?<filters>. Reloading or sharing the URL gives
// the same view.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  page: string;
  params: URLSearchParams;
}

function current(): Route {
  const hash = location.hash.replace(/^#\/?/, '');
  const [page = '', query = ''] = hash.split('?');
  return { page: page || 'overview', params: new URLSearchParams(query) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const on = () => setRoute(current());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function href(page: string, params: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return `#/${page}${s ? `?${s}` : ''}`;
}

/** One filter of the current view, read from and written to the URL. */
export function setParam(name: string, value: string | undefined): void {
  const { page, params } = current();
  if (value) params.set(name, value);
  else params.delete(name);
  const s = params.toString();
  location.hash = `#/${page}${s ? `?${s}` : ''}`;
}

export function setParams(values: Record<string, string | undefined>): void {
  const { page, params } = current();
  for (const [k, v] of Object.entries(values)) {
    if (v) params.set(k, v);
    else params.delete(k);
  }
  const s = params.toString();
  location.hash = `#/${page}${s ? `?${s}` : ''}`;
}
