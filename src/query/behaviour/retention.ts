import { setImmediate } from 'node:timers/promises';
import { validationError } from '../../errors.js';
import { sliceEnds } from '../slices.js';
import type { Db } from '../../storage/db.js';
import { requireFeature, type Reader } from '../guard.js';
import { hoursDays, monthRows, monthTerms, termsAny, termsBucketMask } from '../reports/month-terms.js';
import { asOf, DAY_MS, echo, localDate, plusDays, resolveScope, zonedMidnight, type Interval, type ScopeParams, type Ymd } from '../scope.js';
import { MONTH_DAYS } from '../../storage/read-model/tables.js';
import { checkRange, withBudget } from './budget.js';
import { hasProps, matchSql, scopeSql, unitSql, type EventMatcher } from './event-sql.js';
import { periodAfter, periodsBetween } from './periods.js';
import { segmentClause } from './segments.js';
import { Params } from '../params.js';

// Retention (docs/behaviour.md): cohorts are the local periods of the range; a unit joins the
// cohort of the period of its start event (first_time: its first start event ever, recurring:
// every period it did one); cell k counts the cohort's units that did the return event in period
// c + k (on) or in c + k or later (on or after). Periods are cut in the query's time zone and
// handed to SQL as boundaries (width_bucket), so every zone and DST change is exact.

export interface RetentionQuery extends ScopeParams {
  start_event?: EventMatcher | undefined;
  return_event?: EventMatcher | undefined;
  period?: 'day' | 'week' | 'month' | undefined;
  periods?: number | undefined;
  type?: 'first_time' | 'recurring' | undefined;
  count_by?: 'actor' | 'account' | undefined;
  segment_id?: string | undefined;
}

const MAX_COHORTS = 120;
const rate = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);

interface Plan {
  scope: Awaited<ReturnType<typeof resolveScope>>;
  period: Interval;
  n: number;
  type: 'first_time' | 'recurring';
  by: 'actor' | 'account';
  cohorts: number[];
  bounds: number[];
  /**
   * The CTEs cohort(u, c) (a unit's cohorts: width_bucket's 1-based buckets), active(u, p) (the
   * buckets it returned in) and pairs(u, c, k) (returned k periods after cohort c), and their
   * parameters; undefined when the scope is empty. With `masks`, also masks(u, cm, am): a unit's
   * cohorts and return buckets as bits, from one pass over its rows (recurring).
   */
  ctes?: { text: string; params: Params; masks: boolean; readModel: boolean };
}

/** Retention that the read model answers: "any event" as start and return, by actor, no version filter (the read model keeps no single events). */
const anyEvent = (scope: Plan['scope'], q: RetentionQuery, by: string) => !q.start_event && !q.return_event && by === 'actor' && scope.version === undefined;

/**
 * First-time retention of a start event (no property filter) with "any event" as return, by actor,
 * that the read model answers: rm_actor_event_first keeps each actor's first time per (category,
 * name) over all its events, so only where the filters keep all of them: no version, account or
 * license filter, and no product filter unless the tenant has only that product.
 */
async function eventFirstTimes(db: Db, scope: Plan['scope'], q: RetentionQuery, by: string, type: Plan['type']): Promise<EventMatcher | undefined> {
  const start = q.start_event;
  if (!start || hasProps(start) || q.return_event || by !== 'actor' || type !== 'first_time') return undefined;
  if (scope.version !== undefined || scope.accountId !== undefined || scope.licenseId !== undefined) return undefined;
  if (scope.productId) {
    const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM products WHERE tenant_id = $1', [scope.tenantId]);
    if (row?.n !== 1) return undefined;
  }
  return start;
}

/**
 * Past MASK_BUCKETS buckets, the read model's actor days (one row per active actor and UTC day,
 * under the identified id, with the day's first event time) answer when every period boundary is
 * a UTC midnight: the same answer as raw events, without reading them.
 */
function utcDays(scope: Plan['scope'], bounds: number[], now: Date): boolean {
  const midnight = (t: number) => t % DAY_MS === 0;
  return bounds.every(midnight) && midnight(scope.from.getTime()) && (midnight(scope.to.getTime()) || scope.to.getTime() >= now.getTime());
}

type Marks = { b: string; from: string; to: string; end: string };

/** A UTC day as a date literal. */
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The read model's actor days, by UTC date: every bound is a UTC midnight, so a day falls in the
 * bucket of its date, and it starts before an instant t when its date is before t's day rounded
 * up. Dates compare without a conversion per row.
 */
function readModelCtes(scope: Plan['scope'], type: Plan['type'], p: Params, bounds: number[], end: number, seg: string): string {
  const w = [`d.tenant_id = ${p.add(scope.tenantId)}`, 'd.events > 0'];
  if (scope.productId) w.push(`d.product_id = ${p.add(scope.productId)}`);
  if (scope.accountId !== undefined) w.push(`d.account_id = ${p.add(scope.accountId)}`);
  if (scope.licenseId !== undefined) w.push(`d.license_id = ${p.add(scope.licenseId)}`);
  const days = `SELECT d.actor_id AS u, d.day, d.first_seen FROM rm_actor_days d WHERE ${w.join(' AND ')}${seg}`;
  const dayBefore = (t: number) => `${p.add(utcDay(Math.ceil(t / DAY_MS) * DAY_MS))}::date`;
  const bucket = `width_bucket(x.day, ${p.add(bounds.map(utcDay))}::date[])`;
  const fromDay = `${p.add(utcDay(scope.from.getTime()))}::date`;
  const returns = `x.day >= ${fromDay} AND x.day < ${dayBefore(end)}`;
  if (type === 'first_time') {
    // Grouped by hashing, never sorted: one row per actor and bucket of its days (the bucket's
    // first event; whether a day of it counts as a return), then per actor its cohort (the bucket
    // of its first event, the least of those) and the later buckets it returned in.
    return `
    WITH buckets AS (
      SELECT x.u, ${bucket} AS p, min(x.first_seen) AS first_seen, bool_or(${returns}) AS returned
        FROM (${days}) x GROUP BY 1, 2),
    cohort AS (
      SELECT u, width_bucket(min(first_seen), ${p.add(bounds.map((x) => new Date(x).toISOString()))}::timestamptz[]) AS c
        FROM buckets GROUP BY 1 HAVING min(first_seen) >= ${p.add(scope.from)} AND min(first_seen) < ${p.add(scope.to)}),
    active AS (SELECT u, p FROM buckets WHERE returned)`;
  }
  const starts = `x.day >= ${fromDay} AND x.day < ${dayBefore(scope.to.getTime())}`;
  // Only the days a cohort or a return can fall on. Materialized when both cohort and active read
  // it (drill-down, or past 62 buckets); read once, in line, by masks.
  const inRange = `${days} AND d.day >= ${fromDay} AND d.day < ${dayBefore(Math.max(end, scope.to.getTime()))}`;
  return `
    WITH days AS (${inRange}),
    active AS (SELECT DISTINCT x.u, ${bucket} AS p FROM days x WHERE ${returns}),
    cohort AS (SELECT DISTINCT x.u, ${bucket} AS c FROM days x WHERE ${starts}),
    masks AS (
      SELECT x.u, bit_or(CASE WHEN ${starts} THEN 1::bigint << ${bucket} ELSE 0 END) AS cm,
             bit_or(CASE WHEN ${returns} THEN 1::bigint << ${bucket} ELSE 0 END) AS am
        FROM days x GROUP BY x.u)`;
}

/** Buckets a bigint mask holds (bit 63, the sign, unused); width_bucket numbers them from 1. */
const MASK_BUCKETS = 62;

/**
 * "Any event" retention by actor from rm_actor_months (one row per actor and UTC month; bit d − 1
 * of its hour column hk: an event in UTC hour k of day d), under the conditions of the actor days
 * (anyEvent) in any zone whose local midnights are whole UTC hours, at most MASK_BUCKETS
 * buckets, the range starting at a local midnight and ending at one or now: a tenth of the rows of
 * rm_actor_days when actors come back most days (docs/behaviour.md, "Retention"). Each row's local
 * days become the bits of its buckets by per-month terms (monthTerms, termsBucketMask: the reports'
 * local days from the same table), OR'd per actor in one hash aggregate: masks(u, cm, am) for the
 * counts, cohort and active (from the masks) for drill-down. Undefined when it does not apply.
 */
function monthCtes(
  scope: Plan['scope'],
  type: Plan['type'],
  bounds: number[],
  end: number,
  now: Date,
  start?: EventMatcher,
): ((p: Params, seg: string, segFirst: string) => string) | undefined {
  if (bounds.length - 1 > MASK_BUCKETS) return undefined;
  const tz = scope.tz;
  const fromDay = localDate(scope.from, tz);
  const midnight = (d: Ymd) => zonedMidnight(d.y, d.m, d.d, tz).getTime();
  const to = scope.to.getTime();
  if (midnight(fromDay) !== scope.from.getTime()) return undefined;
  const endsNow = midnight(localDate(scope.to, tz)) !== to;
  if (endsNow && to < now.getTime()) return undefined;
  // Local day g (from the range's first) is in bucket i when bounds[i − 1] <= its midnight < bounds[i].
  const bucketOf = (g: number) => {
    const at = midnight(plusDays(fromDay, g));
    return bounds.findIndex((b, i) => i > 0 && at < b);
  };
  const dayBefore = (t: number) => localDate(new Date(t - 1), tz);
  const cmTerms = monthTerms(tz, fromDay, dayBefore(to)); // cohort days: the range's
  const amTerms = monthTerms(tz, fromDay, dayBefore(end)); // return days: the range's and the periods after it
  if (!cmTerms || !amTerms) return undefined;
  // When the range ends now, its last local day is checked apart (below): the days before it.
  const lastDay = localDate(scope.to, tz);
  const clTerms = endsNow && midnight(lastDay) > scope.from.getTime() ? monthTerms(tz, fromDay, plusDays(lastDay, -1)) : [];
  if (!clTerms) return undefined;
  const cm = termsBucketMask(cmTerms, bucketOf, true);
  const am = termsBucketMask(amTerms, bucketOf, true);
  return (p, seg, segFirst) => {
    const filters = (alias: string) => {
      const w = [`${alias}.tenant_id = ${p.add(scope.tenantId)}`];
      if (scope.productId) w.push(`${alias}.product_id = ${p.add(scope.productId)}`);
      if (scope.accountId !== undefined) w.push(`${alias}.account_id = ${p.add(scope.accountId)}`);
      if (scope.licenseId !== undefined) w.push(`${alias}.license_id = ${p.add(scope.licenseId)}`);
      return w.join(' AND ');
    };
    const w = [filters('a')];
    // A first-time cohort needs the actor's every month (was it seen before the range?); a recurring one only the months its masks
    // read, and one of a start event's first times only those of its returns.
    if (type === 'recurring' || start) {
      const months = [...(start ? [] : cmTerms), ...amTerms].map((t) => t.month).sort();
      w.push(`a.month >= DATE '${months[0] ?? '1970-01-01'}'`, `a.month <= DATE '${months.at(-1) ?? '1970-01-01'}'`);
    }
    // Each row with its days (the stored OR of its hour columns) and, where a term or the first
    // midnight needs fewer hours (not in UTC), the OR of each such set of hours, computed once per
    // row (monthRows: a week's terms are tested once per week; carrying the 24 hour columns
    // instead doubled the query on PGlite).
    const f = scope.from;
    const firstHours = Array.from({ length: f.getUTCHours() }, (_, k) => k);
    const hourSets = [...cmTerms, ...amTerms, ...clTerms].map((t) => t.hours).concat([firstHours]);
    const rows = monthRows(['actor_id', 'month', MONTH_DAYS], [...w, `a.${MONTH_DAYS} <> 0${seg}`], hourSets);
    const series = `generate_series(1, ${bounds.length - 1})`;
    const bitsOf = (col: string, as: string) => `SELECT u, b AS ${as} FROM masks, ${series} b WHERE ${col} & (1::bigint << b) <> 0`;
    if (type === 'recurring') {
      return `
    WITH masks AS (SELECT a.actor_id AS u, bit_or(${cm}) AS cm, bit_or(${am}) AS am FROM ${rows} GROUP BY 1),
    cohort AS (${bitsOf('cm', 'c')}),
    active AS (${bitsOf('am', 'p')})`;
    }
    if (start) {
      // First time of a start event: the cohort is the bucket of the actor's first such event ever
      // (rm_actor_event_first, exact instants), the returns any event from the month rows (as above).
      return `
    WITH first AS (
      SELECT f.actor_id AS u, width_bucket(f.first_seen, ${p.add(bounds.map((x) => new Date(x).toISOString()))}::timestamptz[]) AS c
        FROM rm_actor_event_first f
       WHERE f.tenant_id = ${p.add(scope.tenantId)} AND f.category = ${p.add(start.category)} AND f.name = ${p.add(start.name)}
         AND f.first_seen >= ${p.add(scope.from)} AND f.first_seen < ${p.add(scope.to)}${segFirst}),
    masks AS (
      SELECT f.u, 1::bigint << f.c AS cm, coalesce(r.am, 0::bigint) AS am
        FROM first f LEFT JOIN (SELECT a.actor_id AS u, bit_or(${am}) AS am FROM ${rows} JOIN first x ON x.u = a.actor_id GROUP BY 1) r ON r.u = f.u),
    cohort AS (SELECT u, c FROM first),
    active AS (${bitsOf('am', 'p')})`;
    }
    // First time: no event before the range's first midnight (a whole UTC hour: the days of its
    // month before it, and its day's hours before it), and one in the range; the cohort is the
    // lowest bucket of its days in the range. When the range ends now, an actor seen in the range
    // only on its last day joins only if an event of that day came before now (one dated ahead of
    // the clock does not): checked on the actor days of the UTC days that day overlaps.
    const d0 = f.getUTCDate();
    const h0 = f.getUTCHours();
    const month0 = `${f.toISOString().slice(0, 8)}01`;
    const sameDay = h0 > 0 ? ` OR ${hoursDays(firstHours, 1 << (d0 - 1), true)} <> 0` : '';
    const before = `(a.month < DATE '${month0}' OR (a.month = DATE '${month0}' AND ((a.${MONTH_DAYS} & ${(1 << (d0 - 1)) - 1}) <> 0${sameDay})))`;
    let within = 'true';
    if (endsNow) {
      const utc = (t: number) => `${p.add(utcDay(t))}::date`;
      within = `(cl OR u IN (SELECT d.actor_id FROM rm_actor_days d WHERE ${filters('d')} AND d.day >= ${utc(midnight(lastDay))} AND d.day <= ${utc(to - 1)}
                                   AND d.events > 0 AND d.first_seen < ${p.add(scope.to)}))`;
    }
    return `
    WITH per AS (
      SELECT a.actor_id AS u, bool_or(${before}) AS b, bit_or(${cm}) AS cm, bit_or(${am}) AS am${endsNow ? `, bool_or(${termsAny(clTerms, true)}) AS cl` : ''}
        FROM ${rows} GROUP BY 1),
    masks AS (SELECT u, cm & -cm AS cm, am FROM per WHERE NOT b AND cm <> 0 AND ${within}),
    cohort AS (SELECT u, round(ln(cm::float8) / ln(2))::int AS c FROM masks),
    active AS (${bitsOf('am', 'p')})`;
  };
}

function eventCtes(type: Plan['type'], unit: ReturnType<typeof unitSql>, where: string, m: Marks & { start: string; ret: string; seg: string }): string {
  const { b, from, to, end, start, ret, seg } = m;
  if (type === 'first_time') {
    // One pass per unit, no join: its cohort (the bucket of its first start event ever) and the
    // buckets of its return events in the range and after.
    const inRange = `e.occurred_at >= ${from} AND e.occurred_at < ${end}`;
    return `
    WITH per AS (
      SELECT ${unit.expr} AS u, width_bucket(min(e.occurred_at) FILTER (WHERE ${start}), ${b}::timestamptz[]) AS c,
             array_agg(DISTINCT width_bucket(e.occurred_at, ${b}::timestamptz[])) FILTER (WHERE ${ret} AND ${inRange}) AS ps
        FROM events e ${unit.join}
       WHERE ${where} AND ${unit.present}${seg} AND (${start} OR (${ret} AND ${inRange}))
       GROUP BY 1
      HAVING min(e.occurred_at) FILTER (WHERE ${start}) >= ${from} AND min(e.occurred_at) FILTER (WHERE ${start}) < ${to}),
    cohort AS (SELECT u, c FROM per),
    active AS (SELECT per.u, a.p FROM per CROSS JOIN LATERAL unnest(per.ps) AS a(p))`;
  }
  const bucket = `width_bucket(e.occurred_at, ${b}::timestamptz[])`;
  const starts = `${start} AND e.occurred_at >= ${from} AND e.occurred_at < ${to}`;
  const returns = `${ret} AND e.occurred_at >= ${from} AND e.occurred_at < ${end}`;
  return `
    WITH cohort AS (
      SELECT DISTINCT ${unit.expr} AS u, ${bucket} AS c FROM events e ${unit.join} WHERE ${where} AND ${unit.present}${seg} AND ${starts}),
    active AS (SELECT DISTINCT ${unit.expr} AS u, ${bucket} AS p FROM events e ${unit.join} WHERE ${where} AND ${unit.present} AND ${returns}),
    masks AS (
      SELECT ${unit.expr} AS u, bit_or(CASE WHEN ${starts} THEN 1::bigint << ${bucket} ELSE 0 END) AS cm,
             bit_or(CASE WHEN ${returns} THEN 1::bigint << ${bucket} ELSE 0 END) AS am
        FROM events e ${unit.join} WHERE ${where} AND ${unit.present}${seg} AND ((${starts}) OR (${returns})) GROUP BY 1)`;
}

async function plan(db: Db, who: Reader, q: RetentionQuery, now: Date): Promise<Plan> {
  const tenant = who.tenant;
  if (q.count_by === 'account') requireFeature(tenant, 'account_context');
  const period: Interval = q.period ?? 'week';
  // Retention's periods are `period`; an `interval` that says otherwise would be silently ignored.
  if (q.interval !== undefined && q.interval !== period)
    throw validationError([{ field: 'interval', message: `retention's periods are set by period (${period})` }]);
  const n = q.periods ?? 8;
  const type = q.type ?? 'first_time';
  const by = q.count_by ?? 'actor';
  const scope = await resolveScope(db, tenant, { ...q, interval: period }, now);
  const cohorts = periodsBetween(scope.from.getTime(), scope.to.getTime(), scope.tz, period, 'period');
  if (cohorts.length > MAX_COHORTS)
    throw validationError([{ field: 'period', message: `more than ${MAX_COHORTS} cohorts: use a longer period or a narrower range` }]);
  // Boundaries of every period a return can fall in: the cohorts', then n more.
  const bounds = [...cohorts, ...Array.from({ length: n + 1 }, (_, i) => periodAfter(cohorts[cohorts.length - 1]!, i + 1, scope.tz, period))];
  const returnEnd = Math.min(bounds[bounds.length - 1]!, now.getTime() + 1);
  const out: Plan = { scope, period, n, type, by, cohorts, bounds };
  if (scope.empty) return out;
  checkRange(db, type === 'first_time' ? scope.from.getTime() : cohorts[0]!, returnEnd);
  const p = new Params();
  let text: string;
  let masks = type === 'recurring';
  let readModel = true;
  const firstTimes = await eventFirstTimes(db, scope, q, by, type);
  const months = anyEvent(scope, q, by) || firstTimes ? monthCtes(scope, type, bounds, returnEnd, now, firstTimes) : undefined;
  if (months) {
    const seg = (actor: string) => segmentClause(db, who, q.segment_id, by, actor, p, now);
    text = months(p, await seg('a.actor_id'), firstTimes ? await seg('f.actor_id') : '');
    masks = true;
  } else if (anyEvent(scope, q, by) && utcDays(scope, bounds, now)) {
    text = readModelCtes(scope, type, p, bounds, returnEnd, await segmentClause(db, who, q.segment_id, by, 'd.actor_id', p, now));
  } else {
    readModel = false;
    const b = p.add(bounds.map((x) => new Date(x).toISOString()));
    const [from, to, end] = [p.add(scope.from), p.add(scope.to), p.add(new Date(returnEnd))];
    const unit = unitSql(by);
    const where = scopeSql(scope, p);
    const start = q.start_event ? matchSql(q.start_event, p) : 'true';
    const ret = q.return_event ? matchSql(q.return_event, p) : 'true';
    const seg = await segmentClause(db, who, q.segment_id, by, unit.expr, p, now);
    text = eventCtes(type, unit, where, { start, ret, seg, b, from, to, end });
  }
  text += `,
    pairs AS (SELECT c.u, c.c, a.p - c.c AS k FROM cohort c JOIN active a ON a.u = c.u AND a.p > c.c)`;
  return { ...out, ctes: { text, params: p, masks, readModel } };
}

/**
 * The matrix's counts per cohort c and period k: the cohort's size, units that returned in c + k
 * (`on`), and units whose last return was in c + k (`reach`; "on or after k" adds them up from k).
 */
async function counts(db: Db, ctes: NonNullable<Plan['ctes']>, buckets: number) {
  const sizes = new Map<number, number>();
  const on = new Map<string, number>();
  const reach = new Map<string, number>();
  const add = (m: Map<string, number>, c: number, k: number, n: number) => m.set(`${c}:${k}`, (m.get(`${c}:${k}`) ?? 0) + n);
  if (buckets <= MASK_BUCKETS) {
    // Each unit's cohorts and return buckets as the bits of two bigints, from one hash aggregate by
    // unit (not a join of every cohort with every return: 30 daily cohorts of 10 periods were ~9M
    // pairs at 1M events); units with the same bits come back as one row with their number, and
    // the cells are counted here. Each mask as two exact halves (int8 would pass 2^53 as a float).
    const rows = await withBudget(db, (tx) =>
      tx.query<{ c0: number; c1: number; a0: number; a1: number; n: number }>(
        `${ctes.text},
         cm AS (SELECT u, bit_or(1::bigint << c) AS m FROM cohort GROUP BY u),
         am AS (SELECT u, bit_or(1::bigint << p) AS m FROM active GROUP BY u),
         m AS (${ctes.masks ? 'SELECT cm AS c, am AS a FROM masks WHERE cm <> 0' : 'SELECT cm.m AS c, coalesce(am.m, 0) AS a FROM cm LEFT JOIN am ON am.u = cm.u'})
         SELECT (c & 4294967295)::float8 AS c0, (c >> 32)::float8 AS c1, (a & 4294967295)::float8 AS a0, (a >> 32)::float8 AS a1, count(*)::int AS n
           FROM m GROUP BY c, a`,
        ctes.params.values,
      ),
    );
    const bit = (lo: number, hi: number, i: number) => (i < 32 ? (lo >>> i) & 1 : (hi >>> (i - 32)) & 1) === 1;
    // Cells counted in flat arrays (c × W + k), not a map keyed by text: a row per distinct pair
    // of masks (up to one per unit) adds to up to 61 × 61 cells, which keyed by strings took
    // seconds for recurring daily retention of 200k units. The event loop is served between slices.
    const W = MASK_BUCKETS + 1;
    const [onCells, reachCells] = [new Float64Array(W * W), new Float64Array(W * W)];
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      const [c0, c1, a0, a1, n] = [Number(r.c0), Number(r.c1), Number(r.a0), Number(r.a1), Number(r.n)];
      for (let c = 1; c <= MASK_BUCKETS; c++) {
        if (!bit(c0, c1, c)) continue;
        sizes.set(c, (sizes.get(c) ?? 0) + n);
        let last = 0;
        for (let k = 1; c + k <= MASK_BUCKETS; k++) {
          if (!bit(a0, a1, c + k)) continue;
          onCells[c * W + k]! += n;
          last = k;
        }
        if (last > 0) reachCells[c * W + last]! += n;
      }
      if (sliceEnds(i)) await setImmediate();
    }
    for (let cell = 0; cell < W * W; cell++) {
      if (onCells[cell]! > 0) on.set(`${Math.floor(cell / W)}:${cell % W}`, onCells[cell]!);
      if (reachCells[cell]! > 0) reach.set(`${Math.floor(cell / W)}:${cell % W}`, reachCells[cell]!);
    }
    return { sizes, on, reach };
  }
  const sql = `${ctes.text}
    SELECT 'size' AS kind, c, 0 AS k, count(*)::int AS n FROM cohort GROUP BY c
    UNION ALL SELECT 'on', c, k, count(*)::int FROM pairs GROUP BY c, k
    UNION ALL SELECT 'reach', c, k, count(*)::int FROM (SELECT u, c, max(k) AS k FROM pairs GROUP BY u, c) m GROUP BY c, k`;
  const rows = await withBudget(db, (tx) => tx.query<{ kind: string; c: number; k: number; n: number }>(sql, ctes.params.values));
  for (const r of rows) {
    if (r.kind === 'size') sizes.set(Number(r.c), Number(r.n));
    else add(r.kind === 'on' ? on : reach, Number(r.c), Number(r.k), Number(r.n));
  }
  return { sizes, on, reach };
}

export async function retention(db: Db, who: Reader, q: RetentionQuery, now: Date) {
  const { scope, period, n, type, by, cohorts, bounds, ctes } = await plan(db, who, q, now);
  // Returns fall before the last bound: buckets 1 to bounds.length - 1.
  const { sizes, on, reach } = ctes ? await counts(db, ctes, bounds.length - 1) : { sizes: new Map<number, number>(), on: new Map(), reach: new Map() };

  const matrix = cohorts.map((startMs, i) => {
    const c = i + 1; // width_bucket's 1-based bucket of this cohort
    const size = sizes.get(c) ?? 0;
    const values = [{ period: 0, count: size, percentage: size === 0 ? 0 : 1, count_on_or_after: size, percentage_on_or_after: size === 0 ? 0 : 1 }];
    for (let k = 1; k <= n && bounds[i + k]! <= now.getTime(); k++) {
      let later = 0;
      for (let j = k; j < bounds.length; j++) later += reach.get(`${c}:${j}`) ?? 0;
      const count = on.get(`${c}:${k}`) ?? 0;
      values.push({ period: k, count, percentage: rate(count, size), count_on_or_after: later, percentage_on_or_after: rate(later, size) });
    }
    return { cohort_start: new Date(startMs).toISOString(), size, values };
  });
  const refreshed_at = await asOf(db, scope.tenantId, ctes?.readModel ?? false, now);
  return { ...echo(scope), interval: period, refreshed_at, period, periods: n, type, count_by: by, cohorts: matrix };
}

export interface RetentionCell {
  /** 0-based cohort index, as in the answer's cohorts list. */
  cohort: number;
  /** 0: the cohort itself. */
  period: number;
  criteria?: 'on' | 'on_or_after' | undefined;
}

/** The units behind one cell of the matrix. */
export async function retentionUnitIds(db: Db, who: Reader, q: RetentionQuery, cell: RetentionCell, now: Date) {
  const pl = await plan(db, who, q, now);
  if (cell.cohort >= pl.cohorts.length) throw validationError([{ field: 'cohort', message: `0 to ${pl.cohorts.length - 1}` }]);
  if (cell.period > pl.n) throw validationError([{ field: 'cohort_period', message: `0 to ${pl.n}` }]);
  if (!pl.ctes) return { plan: pl, ids: [] as string[] };
  const p = pl.ctes.params;
  const c = `${p.add(cell.cohort + 1)}::int`;
  const pick =
    cell.period === 0
      ? `SELECT u FROM cohort WHERE c = ${c}`
      : cell.criteria === 'on_or_after'
        ? `SELECT DISTINCT u FROM pairs WHERE c = ${c} AND k >= ${p.add(cell.period)}::int`
        : `SELECT u FROM pairs WHERE c = ${c} AND k = ${p.add(cell.period)}::int`;
  const rows = await withBudget(db, (tx) => tx.query<{ u: string }>(`${pl.ctes!.text} ${pick}`, p.values));
  return { plan: pl, ids: rows.map((r) => r.u) };
}
