import { HOUR_MS, onOrBefore, plusDays, zonedMidnight, type Scope, type Ymd } from '../scope.js';
import type { Params } from '../params.js';
import { MONTH_DAYS } from '../../storage/read-model/tables.js';

const DAY_MS = 24 * HOUR_MS;

// rm_actor_months' hour columns as local days: the per-month terms that the reports (actor-days.ts),
// retention and segments read that table's rows by. Imports nothing of the query layer's filters,
// so that segments, which filters.ts imports, can use it.

/** Calls `fn` with the number of each set bit of a 32-bit integer, lowest first. */
export function eachBit(x: number, fn: (bit: number) => void): void {
  for (let y = x; y !== 0; y &= y - 1) fn(31 - Math.clz32(y & -y));
}

/**
 * rm_actor_months' rows as local days (docs/reports.md, "One row per actor and month"): per UTC
 * month, the (hour k, day d) pairs whose UTC hour lies in a local day of first..last, grouped into
 * terms `(h<k> | …) & days`, each placed by one shift (the index of its local day, counted from
 * `first`, less d − 1). Every UTC hour lies in one local day when the local midnights are whole
 * UTC hours, so the terms are exact in every such zone, daylight saving included: a change of
 * offset inside a month makes more terms for that month (a run of days with the other cutoff
 * hour), no row per day. In UTC each month is one term of all 24 hours.
 */
export interface MonthTerm {
  /** The UTC month, YYYY-MM-01. */
  month: string;
  /** Hour columns k whose days are `days`. */
  hours: number[];
  /** Bit d − 1: day d of the month. */
  days: number;
  /** Local day index of bit 0 (may be negative: then only bits at or past −shift are in `days`). */
  shift: number;
}

/** The terms for local days first..last in tz, or undefined when a local day is not a run of 22 to 26 whole UTC hours. */
export function monthTerms(tz: string, first: Ymd, last: Ymd): MonthTerm[] | undefined {
  // (month, shift) → per hour k, the days of the month whose hour k lies in the range.
  const byShift = new Map<string, { month: string; shift: number; days: number[] }>();
  let start = zonedMidnight(first.y, first.m, first.d, tz).getTime();
  for (let d = first, g = 0; onOrBefore(d, last); d = plusDays(d, 1), g++) {
    const next = plusDays(d, 1);
    const end = zonedMidnight(next.y, next.m, next.d, tz).getTime();
    if (start % HOUR_MS !== 0 || end % HOUR_MS !== 0 || end - start < 22 * HOUR_MS || end - start > 26 * HOUR_MS) return undefined;
    // The local day's hours, a UTC day at a time (its month, day and entry found once, not per hour: a range of decades is 500k hours).
    for (let t = start; t < end;) {
      const u = new Date(t);
      const dom = u.getUTCDate();
      const month = `${u.toISOString().slice(0, 8)}01`;
      const shift = g - (dom - 1);
      const key = `${month} ${shift}`;
      let e = byShift.get(key);
      if (!e) byShift.set(key, (e = { month, shift, days: new Array<number>(24).fill(0) }));
      const upTo = Math.min(end, (Math.floor(t / DAY_MS) + 1) * DAY_MS);
      for (; t < upTo; t += HOUR_MS) e.days[(((t % DAY_MS) + DAY_MS) % DAY_MS) / HOUR_MS]! |= 1 << (dom - 1);
    }
    start = end;
  }
  const terms: MonthTerm[] = [];
  for (const e of byShift.values()) {
    const byDays = new Map<number, number[]>();
    e.days.forEach((days, k) => days !== 0 && byDays.set(days, [...(byDays.get(days) ?? []), k]));
    for (const [days, hours] of byDays) terms.push({ month: e.month, hours, days, shift: e.shift });
  }
  return terms;
}

/** The name of hourColumns' column for the OR of these hour columns: `t`, then the set as a number (bit k: hour k). */
const hourSetName = (hours: number[]) => `t${hours.reduce((m, k) => m | (1 << k), 0)}`;

/**
 * SQL select items (each after a comma) that compute, once per row of rm_actor_months (alias a),
 * the OR of each set of hour columns narrower than a whole day: read by `termDays(…, true)`. A
 * term's OR written out in each of its buckets' tests was computed again for each (PostgreSQL does
 * not share equal subexpressions). monthRows selects them.
 */
function hourColumns(sets: number[][]): string {
  const named = new Map(sets.filter((h) => h.length < 24 && h.length > 0).map((h) => [hourSetName(h), h]));
  return [...named].map(([name, h]) => `, (${h.map((k) => `a.h${k}`).join(' | ')}) AS ${name}`).join('');
}

/**
 * SQL: a FROM item `a` of rm_actor_months rows (`where` on alias a) with the columns `select` and
 * hourColumns' for `hourSets`. With any, the subquery is fenced (`OFFSET 0`) so that the planner
 * does not flatten it and write the ORs back into each reader; without, it is flattened.
 */
export function monthRows(select: string[], where: string[], hourSets: number[][]): string {
  const columns = hourColumns(hourSets);
  return `(SELECT ${select.map((c) => `a.${c}`).join(', ')}${columns} FROM rm_actor_months a WHERE ${where.join(' AND ')}${columns && ' OFFSET 0'}) a`;
}

/**
 * SQL: a row's (alias a) days among `days` with an event in one of these hours, as an int; all 24
 * hours read the stored OR; with `columns`, fewer read their hourColumns column.
 */
export const hoursDays = (hours: number[], days: number, columns = false) =>
  `((${hours.length === 24 ? `a.${MONTH_DAYS}` : columns ? `a.${hourSetName(hours)}` : hours.map((k) => `a.h${k}`).join(' | ')}) & ${days})`;

/** SQL: a row's days of one term (alias a), as an int, not shifted (hoursDays). */
export const termDays = (t: MonthTerm, days = t.days, columns = false) => hoursDays(t.hours, days, columns);

/**
 * SQL: the bucket bits (a bigint) of a row's active local days among `terms` (alias a of
 * rm_actor_months): bit `bucketOf(g)` for local day g (the terms' own count, from the first day
 * monthTerms was given). Days map to buckets by a shift where a term's days keep their distance in
 * buckets (interval day), else by one test per (term, bucket).
 */
export function termsBucketMask(terms: MonthTerm[], bucketOf: (g: number) => number, columns = false): string {
  const arms = [...new Set(terms.map((t) => t.month))].sort().map((m) => {
    const parts = terms
      .filter((t) => t.month === m)
      .flatMap((t) => {
        const byBucket = new Map<number, number>();
        const shifts = new Set<number>();
        eachBit(t.days, (bit) => {
          const b = bucketOf(t.shift + bit);
          byBucket.set(b, (byBucket.get(b) ?? 0) | (1 << bit));
          shifts.add(b - bit);
        });
        if (shifts.size === 1) {
          const by = [...shifts][0]!;
          return [`(${termDays(t, t.days, columns)}::bigint ${by >= 0 ? '<<' : '>>'} ${Math.abs(by)})`];
        }
        return [...byBucket].map(([b, days]) => `CASE WHEN ${termDays(t, days, columns)} <> 0 THEN ${2n ** BigInt(b)}::bigint ELSE 0::bigint END`);
      });
    return `WHEN DATE '${m}' THEN ${parts.join(' | ')}`;
  });
  return arms.length ? `CASE a.month ${arms.join(' ')} ELSE 0::bigint END` : '0::bigint';
}

/** SQL: whether a row (alias a of rm_actor_months) has an active local day among `terms`. */
export function termsAny(terms: MonthTerm[], columns = false): string {
  const arms = [...new Set(terms.map((t) => t.month))].sort().map(
    (m) =>
      `WHEN DATE '${m}' THEN ${terms
        .filter((t) => t.month === m)
        .map((t) => termDays(t, t.days, columns))
        .join(' | ')}`,
  );
  return arms.length ? `(CASE a.month ${arms.join(' ')} ELSE 0 END) <> 0` : 'false';
}

/** SQL conditions on rm_actor_months rows (alias a): the scope's tenant, product, account and license, in the months `terms` read. */
export function monthRowsWhere(s: Pick<Scope, 'tenantId' | 'productId' | 'accountId' | 'licenseId'>, sql: Params, terms: MonthTerm[]): string[] {
  const months = [...new Set(terms.map((t) => t.month))].sort();
  const w = [`a.tenant_id = ${sql.add(s.tenantId)}`, `a.month >= ${sql.add(months[0])}::date`, `a.month <= ${sql.add(months.at(-1))}::date`];
  if (s.productId) w.push(`a.product_id = ${sql.add(s.productId)}`);
  if (s.accountId !== undefined) w.push(`a.account_id = ${sql.add(s.accountId)}`);
  if (s.licenseId !== undefined) w.push(`a.license_id = ${sql.add(s.licenseId)}`);
  return w;
}
