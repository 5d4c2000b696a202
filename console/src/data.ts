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

/**
 * Every rate the console shows (crash-free sessions and actors, adoption, shares, conversion,
 * retention cells), one way: at most one decimal, a space, then "%" (0.33333 → "33.3 %", 0.5 →
 * "50 %"). `scale` 100 for the percentages the API gives 0–100 (release health, environment,
 * versions); 1 (the default) for ratios 0–1 (funnels, retention).
 */
export function pct(value: number, scale: 1 | 100 = 1): string {
  const tenths = Math.round(scale === 1 ? value * 1000 : value * 10);
  // A share too small for one decimal is not shown as none: 245 events of 10,000,000 are "< 0.1 %".
  if (tenths === 0 && value > 0) return '< 0.1 %';
  return `${fmt.format(tenths / 10)} %`;
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '—');

/** A small object in short, its scalar fields as `key: value` (at most `max`): `os: linux, locale: de`. */
export function keyValues(v: unknown, max = 4): string {
  if (v === null || v === undefined) return '—';
  if (typeof v !== 'object' || Array.isArray(v)) return JSON.stringify(v);
  const parts = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== null && typeof x !== 'object')
    .map(([k, x]) => `${k}: ${String(x)}`);
  return parts.length ? parts.slice(0, max).join(', ') + (parts.length > max ? ', …' : '') : '—';
}
