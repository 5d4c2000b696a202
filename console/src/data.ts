// A small query hook (what TanStack Query would do here, in 40 lines): one request per key,
// the answer kept while the key is the same, `reload` to fetch again.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

export type Loaded<T> = { state: 'loading' } | { state: 'error'; error: ApiError } | { state: 'ok'; data: T };

export function useQuery<T>(key: string | null, load: () => Promise<T>, refreshMs?: number): Loaded<T> & { reload: () => void } {
  // The answer is kept with the key it answers: a new key reads as loading at once.
  const [result, setResult] = useState<{ for: string | null; r: Loaded<T> }>({ for: null, r: { state: 'loading' } });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    if (key === null) return;
    let live = true;
    load().then(
      (data) => live && setResult({ for: key, r: { state: 'ok', data } }),
      (e: unknown) => live && setResult({ for: key, r: { state: 'error', error: e instanceof ApiError ? e : new ApiError(0, 'network_error', String(e)) } }),
    );
    return () => {
      live = false;
    };
  }, [key, tick]);
  useEffect(() => {
    if (!refreshMs) return;
    const t = setInterval(reload, refreshMs);
    return () => clearInterval(t);
  }, [refreshMs, reload]);
  return { ...(result.for === key ? result.r : { state: 'loading' }), reload };
}

/** A date range of the URL (`7d`, `30d`, `90d`) as the since/until the list endpoints take. */
export function rangeSince(range: string | null): string | undefined {
  const days = { '24h': 1, '7d': 7, '30d': 30, '90d': 90 }[range ?? ''];
  return days ? new Date(Date.now() - days * 86_400_000).toISOString() : undefined;
}

export const fmt = new Intl.NumberFormat('en-US');
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '—');
