import { storable } from './errors.js';
import type { PageOptions } from './types.js';
import { LIMITS, truncate } from './validate.js';

// What a page view sends: the URL (without its query string and fragment unless kept), its
// path, the title and the referrer, each cut to the length of a property value.

/** A URL without its query string and fragment (unless kept), as page views send it. */
export function pageUrl(url: string, keepQuery: boolean): string {
  try {
    const u = new URL(url);
    if (!keepQuery) u.search = '';
    u.hash = '';
    return u.href;
  } catch {
    return keepQuery ? url.split('#')[0]! : url.split(/[?#]/)[0]!;
  }
}

export interface PageHere {
  url: string;
  title?: string;
  referrer?: string;
}

/**
 * The page view's properties, or undefined without a URL. `previous` is the URL of the last page
 * view of this page (the referrer of a single-page app's navigation).
 */
export function pageProperties(
  here: PageHere | undefined,
  opts: PageOptions,
  previous: string | undefined,
  keepQuery: boolean,
): { url: string; properties: Record<string, string | undefined> } | undefined {
  const raw = opts.url ?? here?.url;
  if (raw === undefined) return undefined;
  const url = pageUrl(raw, keepQuery);
  const referrer =
    opts.referrer !== undefined ? pageUrl(opts.referrer, keepQuery) : (previous ?? (here?.referrer ? pageUrl(here.referrer, keepQuery) : undefined));
  let path: string | undefined;
  try {
    path = new URL(url).pathname;
  } catch {
    // a relative or odd URL: sent as given, without a path
  }
  const cut = (s: string | undefined) => (s ? truncate(storable(s), LIMITS.propertyValue) : undefined);
  return { url, properties: { url: cut(url), path: cut(path), title: cut(opts.title ?? here?.title), referrer: cut(referrer) } };
}
