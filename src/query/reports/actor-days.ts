import { validationError } from '../../errors.js';
import { ACTOR, rawEvents, segmentWhere, type Filters } from '../filters.js';
import { isLocalMidnight, isoDay, localDate, onOrBefore, plusDays, zonedMidnight, type Ymd } from '../scope.js';
import { WORD_DAYS } from './buckets.js';
import { eachBit, monthRows, monthRowsWhere, monthTerms, termDays, termsBucketMask, type MonthTerm } from './month-terms.js';
import { Params } from '../params.js';
import { MONTH_DAYS } from '../../storage/read-model/tables.js';

// The active actors of a range as (local day, actor) pairs: the source of DAU/WAU/MAU,
// stickiness, lifecycle, versions and environment. From the read model's actor days when they
// answer exactly: rm_actor_days keeps UTC days and, per day, the UTC hours the actor had events
// (a bitmask), so an actor's local days are exact in any zone whose local midnights fall on whole
// UTC hours (every zone with a whole-hour offset, daylight saving included). Raw events answer the
// rest: filters the read model does not keep (category, name, property, version) and zones with a
// half- or quarter-hour offset (docs/reports.md).

export const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'UCT', 'Etc/GMT', 'GMT', 'Etc/Zulu', 'Zulu', 'Etc/Universal', 'Universal']);

export interface ActorDays {
  /** SQL of a CTE body with columns day (date) and actor (text); a pair may come more than once. */
  sql: string;
  /** The first local day the CTE reaches back to. */
  backDay: string;
  /** First and last local day of the range itself (the CTE reaches back further, for rolling windows and lifecycle). */
  firstDay: string;
  lastDay: string;
  source: 'read_model' | 'events';
}

/**
 * Whether each local midnight from `first` to the day after `last` is a whole UTC hour (or `unitMs`):
 * then every UTC hour (unit) lies in one local day.
 */
export function wholeHourDays(tz: string, first: Ymd, last: Ymd, unitMs = 3_600_000): boolean {
  if (UTC_ZONES.has(tz)) return true;
  for (let d = first, n = 0; n <= 800; d = plusDays(d, 1), n++) {
    if (zonedMidnight(d.y, d.m, d.d, tz).getTime() % unitMs !== 0) return false;
    if (!onOrBefore(d, last)) return true;
  }
  return false;
}

/** Whether the read model's actor days answer these filters: no event-level filter, a whole-hour zone. */
export function actorDaysAnswer(f: Filters, first: Ymd, last: Ymd): boolean {
  return (
    f.category === undefined && f.name === undefined && f.properties.length === 0 && f.scope.version === undefined && wholeHourDays(f.scope.tz, first, last)
  );
}

/**
 * The local days first..last when the range is made of them (from a local midnight to a local
 * midnight, or to now: the current day counts whole, nothing has happened after now) and the read
 * model's actor days answer the filters; else undefined.
 */
export function wholeLocalDays(f: Filters, toNow: boolean): { first: Ymd; last: Ymd } | undefined {
  const s = f.scope;
  if (!isLocalMidnight(s.from, s.tz) || !(toNow || isLocalMidnight(s.to, s.tz))) return undefined;
  const first = localDate(s.from, s.tz);
  const last = localDate(new Date(s.to.getTime() - 1), s.tz);
  return actorDaysAnswer(f, first, last) ? { first, last } : undefined;
}

/**
 * rm_actor_days rows (alias a) with their local day `lday`, for local days first..last: in UTC the
 * row's own day; elsewhere a row joins each local day its active hours fall in (a UTC day spans
 * at most two local days). `where` adds conditions on a; only rows with events are active.
 */
export function localActorDays(f: Filters, sql: Params, first: Ymd, last: Ymd, columns: string, where: string[] = []): string {
  const s = f.scope;
  const w = [`a.tenant_id = ${sql.add(s.tenantId)}`, 'a.events > 0', ...where];
  if (s.productId) w.push(`a.product_id = ${sql.add(s.productId)}`);
  if (s.accountId !== undefined) w.push(`a.account_id = ${sql.add(s.accountId)}`);
  if (s.licenseId !== undefined) w.push(`a.license_id = ${sql.add(s.licenseId)}`);
  w.push(segmentWhere(f, sql, 'a.actor_id'));
  if (UTC_ZONES.has(s.tz)) {
    w.push(`a.day >= ${sql.add(isoDay(first))}::date`, `a.day <= ${sql.add(isoDay(last))}::date`);
    return `SELECT ${columns} FROM (SELECT a.*, a.day AS lday FROM rm_actor_days a WHERE ${w.join(' AND ')}) a`;
  }
  const lo = zonedMidnight(first.y, first.m, first.d, s.tz);
  const next = plusDays(last, 1);
  const hi = zonedMidnight(next.y, next.m, next.d, s.tz);
  w.push(`a.day >= ${sql.add(lo.toISOString().slice(0, 10))}::date`, `a.day <= ${sql.add(new Date(hi.getTime() - 1).toISOString().slice(0, 10))}::date`);
  // Per UTC day, the mask of its hours that fall in each local day.
  const hours = `SELECT (t AT TIME ZONE 'UTC')::date AS day, (t AT TIME ZONE ${sql.add(s.tz)})::date AS lday, bit_or(1 << extract(hour FROM t AT TIME ZONE 'UTC')::int) AS mask
      FROM generate_series(${sql.add(lo)}::timestamptz, ${sql.add(hi)}::timestamptz - interval '1 hour', interval '1 hour') t GROUP BY 1, 2`;
  return `SELECT ${columns} FROM (SELECT a.*, m.lday FROM rm_actor_days a JOIN (${hours}) m ON m.day = a.day AND a.hours & m.mask <> 0
     WHERE ${w.join(' AND ')}) a`;
}

/** The pairs from `from` less 29 days (MAU's window) or the previous month's start, whichever is earlier, to `to`. */
export function actorDays(f: Filters, sql: Params): ActorDays {
  const s = f.scope;
  if (s.interval === 'hour') throw validationError([{ field: 'interval', message: 'active actors are counted per day, week or month' }]);
  const first = localDate(s.from, s.tz);
  const last = localDate(new Date(s.to.getTime() - 1), s.tz);
  const back = Math.min(zonedMidnight(first.y, first.m, first.d - 29, s.tz).getTime(), zonedMidnight(first.y, first.m - 1, 1, s.tz).getTime());
  const backDay = localDate(new Date(back), s.tz);
  const wide: Filters = { ...f, scope: { ...s, from: new Date(back) } };
  const range = { firstDay: isoDay(first), lastDay: isoDay(last), backDay: isoDay(backDay) };
  if (!actorDaysAnswer(f, backDay, last)) {
    return { ...range, source: 'events', sql: rawEvents(wide, sql, `(e.occurred_at AT TIME ZONE ${sql.add(s.tz)})::date AS day, ${ACTOR} AS actor`) };
  }
  return { ...range, source: 'read_model', sql: localActorDays(f, sql, backDay, last, 'a.lday AS day, a.actor_id AS actor') };
}

/**
 * rm_actor_months rows (alias a) of the scope's filters, for the local days first..last: `words`
 * gives, per 63-day word of local days from `first`, an expression of a row's active days in it
 * (bit n: local day 63·w + n), to OR per actor; `from` (a FROM item and its WHERE, to which a
 * caller may add `AND …`) keeps the rows with an active day in the range, of the columns actor_id,
 * account_id, license_id, month and days (and monthRows' hour columns outside UTC, when `words` or a `mask`
 * read the terms again: `columns`). Undefined when the zone's local days are not whole UTC hours
 * (monthTerms).
 */
export function localActorMonths(
  f: Filters,
  sql: Params,
  first: Ymd,
  last: Ymd,
  words: number,
  mask = false,
): { from: string; terms: MonthTerm[]; columns: boolean; words: string[] } | undefined {
  const terms = monthTerms(f.scope.tz, first, last);
  if (!terms) return undefined;
  const s = f.scope;
  const months = [...new Set(terms.map((t) => t.month))].sort();
  const w = [...monthRowsWhere(s, sql, terms), segmentWhere(f, sql, 'a.actor_id')];
  // A term read once per row (by `any` alone) is written out in it; read again (by a word or a mask), its hours are OR'd once per row.
  const columns = (words > 0 || mask) && terms.some((t) => t.hours.length < 24);
  const byMonth = (expr: (t: MonthTerm) => string | undefined, empty: string) => {
    const arms = months.flatMap((m) => {
      const parts = terms.filter((t) => t.month === m).flatMap((t) => expr(t) ?? []);
      return parts.length ? [`WHEN DATE '${m}' THEN ${parts.join(' | ')}`] : [];
    });
    return arms.length ? `CASE a.month ${arms.join(' ')} ELSE ${empty} END` : empty;
  };
  const word = (n: number) =>
    byMonth((t) => {
      // The term's days that land in word n (local days 63n … 63n + 62), then shifted into place.
      let days = 0;
      eachBit(t.days, (bit) => {
        const at = t.shift + bit - WORD_DAYS * n;
        if (at >= 0 && at < WORD_DAYS) days |= 1 << bit;
      });
      if (days === 0) return undefined;
      const by = t.shift - WORD_DAYS * n;
      return `(${termDays(t, days, columns)}::bigint ${by >= 0 ? '<<' : '>>'} ${Math.abs(by)})`;
    }, '0::bigint');
  const any = `${byMonth((t) => termDays(t, t.days, columns), '0')} <> 0`;
  // Outside UTC each set of hour columns a term reads is OR'd once per row (monthRows), in a
  // subquery of the columns the readers use; a term is read by each word it falls in and by `any`,
  // and a term whose days fall in several buckets once per bucket (monthBucketMask).
  const from = columns
    ? `${monthRows(
        ['actor_id', 'account_id', 'license_id', 'month', MONTH_DAYS],
        w,
        terms.map((t) => t.hours),
      )} WHERE ${any}`
    : `rm_actor_months a WHERE ${[...w, any].join(' AND ')}`;
  return { from, terms, columns, words: Array.from({ length: words }, (_, n) => word(n)) };
}

/**
 * A row's buckets (alias a of rm_actor_months), for local days first..last: bit `bucketOf(g)` set
 * when the row has an active local day g (counted from `first`), at most 63 buckets. Undefined when
 * the zone's local days are not whole UTC hours.
 */
export function monthBucketMask(f: Filters, sql: Params, first: Ymd, last: Ymd, bucketOf: (g: number) => number): { from: string; mask: string } | undefined {
  const months = localActorMonths(f, sql, first, last, 0, true);
  if (!months) return undefined;
  return { from: months.from, mask: termsBucketMask(months.terms, bucketOf, months.columns) };
}
