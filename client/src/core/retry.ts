// Backoff arithmetic, pure so that it can be tested without clocks.

/** Full jitter (AWS): a uniform delay in [0, min(max, base·2^attempt)]; spreads a fleet's retries. */
export function fullJitter(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * Equal jitter: [ceiling/2, ceiling]. For billing probes, where a probe that comes too early only
 * costs a refused request, but a fleet probing in step would hammer the server at each upgrade.
 */
export function equalJitter(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(ceiling / 2 + random() * (ceiling / 2));
}

/** Retry-After as delta-seconds or an HTTP date, in ms from now, capped; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, capMs: number, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(capMs, Math.max(0, Math.ceil(ms)));
}
