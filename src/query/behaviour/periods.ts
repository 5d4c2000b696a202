import { seriesTooLong } from '../filters.js';
import { localDate, zonedMidnight, type Interval } from '../scope.js';

// Local calendar periods (hour, day, ISO week from Monday, month) in a time zone, for funnel
// trends and retention cohorts. Hours are UTC hours (exact in every whole-hour zone).

const HOUR = 3_600_000;
export const MAX_PERIODS = 1000;

/** The start of the local period holding `t` (ms). */
export function periodStart(t: number, tz: string, interval: Interval): number {
  if (interval === 'hour') return Math.floor(t / HOUR) * HOUR;
  const d = localDate(new Date(t), tz);
  if (interval === 'month') return zonedMidnight(d.y, d.m, 1, tz).getTime();
  if (interval === 'day') return zonedMidnight(d.y, d.m, d.d, tz).getTime();
  const weekday = (new Date(Date.UTC(d.y, d.m - 1, d.d)).getUTCDay() + 6) % 7; // Monday = 0
  return zonedMidnight(d.y, d.m, d.d - weekday, tz).getTime();
}

/** The start of the period `k` periods after the one starting at `start`. */
export function periodAfter(start: number, k: number, tz: string, interval: Interval): number {
  if (interval === 'hour') return start + k * HOUR;
  const d = localDate(new Date(start), tz);
  if (interval === 'month') return zonedMidnight(d.y, d.m + k, 1, tz).getTime();
  return zonedMidnight(d.y, d.m, d.d + k * (interval === 'week' ? 7 : 1), tz).getTime();
}

/** Every period start from the one holding `from` until `to` (exclusive). */
export function periodsBetween(from: number, to: number, tz: string, interval: Interval, field = 'interval'): number[] {
  const out: number[] = [];
  for (let p = periodStart(from, tz, interval); p < to; p = periodAfter(p, 1, tz, interval)) {
    out.push(p);
    // As a report's series past its buckets (filters.ts, checkBuckets): a query too large, not an invalid one.
    if (out.length > MAX_PERIODS) throw seriesTooLong(`more than ${MAX_PERIODS} ${interval} periods: use a wider ${field} or a narrower range`, field);
  }
  return out;
}
