import type { Queryable } from '../../storage/db.js';
import { bucketSeries, label, type Filters } from '../filters.js';
import { DAY_MS, type Ymd } from '../scope.js';
import { eachBit } from './month-terms.js';
import { Params } from '../params.js';

// A report's buckets (interval day, week from Monday, or month, in local days): their labels, their
// numbers for per-actor bit masks in SQL, and the same cut in the server.

const MAX_MASK_BUCKETS = 63;

/** Days per bigint word of a day mask (bit 63 is the sign). */
export const WORD_DAYS = 63;

/**
 * SQL: 63-day bigint words `<alias>.w0 …` as one text of their low and high 32-bit halves in
 * decimal (a JS number holds 32 bits exactly, not 63), for `eachWordBit`. An array, not
 * concat_ws's arguments: a function takes at most 100, which a range of 50 words (about 8.5
 * years, by week or month) passed.
 */
export function wordsText(alias: string, words: number): string {
  return `array_to_string(ARRAY[${Array.from({ length: words }, (_, w) => `${alias}.w${w} & 4294967295, ${alias}.w${w} >> 32`).join(', ')}], ',')`;
}

/** Calls `fn` with each set bit of a `wordsText` value: bit n of word w is day 63·w + n. */
export function eachWordBit(text: string, fn: (day: number) => void): void {
  text.split(',').forEach((half, h) => {
    const at = (h >> 1) * WORD_DAYS + (h & 1) * 32;
    eachBit(Number(half), (bit) => fn(at + bit));
  });
}

export interface BucketIndex {
  /** A local day's bucket number (0: the bucket of the range's first day). */
  of(day: string): string;
  /** A bucket number's local start (a timestamp). */
  bucket(n: string): string;
  /**
   * An aggregate: per bucket, the sum of `weight` over the rows whose `mask` has the bucket's bit,
   * as an array (NULL where none). One pass with a filter per bucket: a join of each mask to the 63
   * bit numbers made a row per pair (7.6M for 121k masks, 3 s).
   */
  sums(mask: string, weight: string): string;
}

/**
 * A local day's bucket as a number from 0 (the bucket of `first`), and back, when the range has at
 * most 63 buckets of the interval; else undefined.
 */
export function bucketIndex(i: 'day' | 'week' | 'month', first: Ymd, last: Ymd, sql: Params): BucketIndex | undefined {
  const days = (Date.UTC(last.y, last.m - 1, last.d) - Date.UTC(first.y, first.m - 1, first.d)) / DAY_MS;
  const buckets = i === 'day' ? days + 1 : i === 'week' ? Math.floor(days / 7) + 2 : (last.y - first.y) * 12 + last.m - first.m + 1;
  if (buckets > MAX_MASK_BUCKETS) return undefined;
  const start = sql.add(`${first.y}-${String(first.m).padStart(2, '0')}-${String(first.d).padStart(2, '0')}`);
  const b0 = `date_trunc('${i}', ${start}::timestamp)`;
  const sums = (mask: string, weight: string) =>
    `array[${Array.from({ length: buckets }, (_, n) => `sum(${weight}) FILTER (WHERE ${mask} & (1::bigint << ${n}) <> 0)`).join(', ')}]`;
  if (i === 'day') return { sums, of: (d) => `(${d} - ${start}::date)`, bucket: (n) => `${start}::date::timestamp + make_interval(days => ${n})` };
  if (i === 'week')
    return { sums, of: (d) => `((date_trunc('week', ${d}::timestamp)::date - ${b0}::date) / 7)`, bucket: (n) => `${b0} + make_interval(days => 7 * ${n})` };
  return {
    sums,
    of: (d) => `((extract(year FROM ${d})::int - ${first.y}) * 12 + extract(month FROM ${d})::int - ${first.m})`,
    bucket: (n) => `${b0} + make_interval(months => ${n})`,
  };
}

/** The bucket (its first day) a local day YYYY-MM-DD falls in: PostgreSQL's date_trunc, weeks from Monday. */
export function bucketStart(day: string, i: 'day' | 'week' | 'month'): string {
  if (i === 'day') return day;
  if (i === 'month') return `${day.slice(0, 8)}01`;
  const t = Date.parse(`${day}T00:00:00Z`);
  return new Date(t - ((new Date(t).getUTCDay() + 6) % 7) * DAY_MS).toISOString().slice(0, 10);
}

/** Every bucket's label of the scope's range, in order. */
export async function bucketLabels(q: Queryable, f: Filters): Promise<string[]> {
  const sql = new Params();
  const rows = await q.query<{ date: string }>(`SELECT ${label('b', f.scope)} AS date FROM (${bucketSeries(sql, f.scope)}) x ORDER BY b`, sql.values);
  return rows.map((r) => r.date);
}
