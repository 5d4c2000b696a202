import { setImmediate } from 'node:timers/promises';
import { validationError } from '../../errors.js';
import type { Db } from '../../storage/db.js';
import { requireFeature, type Reader, type TenantPlan } from '../guard.js';
import { echo, resolveScope, type Scope, type ScopeParams } from '../scope.js';
import { checkRange, MAX_ROWS, tooLarge, withBudget } from './budget.js';
import { hasProps, maskSql, matchSql, propsSql, scopeSql, unitSql, type CountBy, type EventMatcher } from './event-sql.js';
import { evaluateUnit, median, type FunnelOrder, type FunnelRules, type UnitResult } from './funnel-eval.js';
import { Columns } from './funnel-columns.js';
import { periodsBetween } from './periods.js';
import { segmentClause } from './segments.js';
import { Params } from '../params.js';
import { sliceEnds } from '../slices.js';

// Funnels on raw events (docs/behaviour.md): one statement reads the step and exclusion events of
// the units that entered in the range, identity links applied, as one row per unit holding its
// events in time order; the state machine of funnel-eval.ts runs per unit; the answer is counted
// from its results. Exact: nothing is sampled or estimated.

export interface FunnelQuery extends ScopeParams {
  steps: EventMatcher[];
  order?: FunnelOrder | undefined;
  window?: { value: number; unit: 'minute' | 'hour' | 'day' | 'week' } | undefined;
  exclusions?: (EventMatcher & { from_step: number; to_step: number })[] | undefined;
  count_by?: CountBy | undefined;
  breakdown?: string | undefined;
  segment_id?: string | undefined;
}

type Row = { u: string; t: string; m: string; x?: number[]; b?: (string | null)[] };

const UNIT_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 } as const;
const BREAKDOWN_LIMIT = 25;
const HISTOGRAM_BINS = 10;

export interface FunnelRun {
  scope: Scope;
  query: Required<Pick<FunnelQuery, 'order' | 'window' | 'count_by'>> & FunnelQuery;
  rules: FunnelRules;
  /** Every unit that entered (or was excluded), with its result and its breakdown value. */
  units: { unit: string; result: UnitResult; value: string | null }[];
}

function breakdownSql(b: string | undefined, p: Params): string {
  if (b === undefined) return 'NULL::text';
  if (b === 'product_version') return 'e.product_version';
  if (b === 'account_id' || b === 'license_id') return `e.${b}`;
  const key = /^properties\.(.{1,128})$/s.exec(b);
  if (!key) throw validationError([{ field: 'breakdown', message: 'product_version, account_id, license_id or properties.<key>' }]);
  return `e.properties ->> ${p.add(key[1])}`;
}

function validate(q: FunnelQuery, tenant: TenantPlan): void {
  (q.exclusions ?? []).forEach((x, i) => {
    if (x.from_step >= x.to_step || x.to_step > q.steps.length) {
      throw validationError([{ field: `exclusions.${i}.to_step`, message: `from_step < to_step <= ${q.steps.length}` }]);
    }
  });
  if (q.count_by === 'account' || q.breakdown === 'account_id' || q.breakdown === 'license_id') requireFeature(tenant, 'account_context');
}

/** Reads and evaluates a funnel: the part its answer and its drill-down share. */
export async function runFunnel(db: Db, who: Reader, input: FunnelQuery, now: Date): Promise<FunnelRun> {
  const tenant = who.tenant;
  validate(input, tenant);
  const query = { ...input, order: input.order ?? 'ordered', window: input.window ?? { value: 14, unit: 'day' as const }, count_by: input.count_by ?? 'actor' };
  const scope = await resolveScope(db, tenant, input, now);
  const windowMs = query.window.value * UNIT_MS[query.window.unit];
  if (windowMs > 90 * UNIT_MS.day) throw validationError([{ field: 'window', message: 'at most 90 days' }]);
  const rules: FunnelRules = {
    steps: query.steps.length,
    order: query.order,
    windowMs,
    from: scope.from.getTime(),
    to: scope.to.getTime(),
    exclusions: (query.exclusions ?? []).map((x) => ({ from: x.from_step, to: x.to_step })),
  };
  if (scope.empty) return { scope, query, rules, units: [] };
  const scanTo = Math.min(rules.to + windowMs, now.getTime() + 1);
  checkRange(db, rules.from, scanTo);

  const p = new Params();
  const unit = unitSql(query.count_by);
  const where = scopeSql(scope, p, query.order !== 'strict');
  const b = breakdownSql(query.breakdown, p);
  const seg = await segmentClause(db, who, query.segment_id, query.count_by, unit.expr, p, now);
  const [from, to, end] = [p.add(scope.from), p.add(scope.to), p.add(new Date(scanTo))];
  const exclusions = query.exclusions ?? [];
  // The events read, each with its step mask m and exclusion mask x (bit i: it matches matcher i).
  // Strict order reads every event of the unit, its masks worked out per event. The others read
  // only the events their steps and exclusions name: one range of events_by_name per distinct
  // (category, name), an index-only scan unless a matcher there filters by property, whose rows
  // carry the masks of that name's matchers as constants (a matcher with properties adds its bit
  // where they match), instead of an expression per matcher per row (docs/behaviour.md, measured).
  const cols = ['e.tenant_id', 'e.actor_id', 'e.occurred_at', 'e.event_id', ...(query.count_by === 'actor' ? [] : [`e.${query.count_by}_id`]), `${b} AS b`];
  const scan = (masks: [string, string], filter: string) =>
    `SELECT ${cols.join(', ')}, ${masks[0]} AS m, ${masks[1]} AS x FROM events e WHERE ${where} AND e.occurred_at >= ${from} AND e.occurred_at < ${end}${filter}`;
  let events: string;
  if (query.order === 'strict') {
    events = scan([maskSql(query.steps.map((m) => matchSql(m, p))), maskSql(exclusions.map((m) => matchSql(m, p)))], '');
  } else {
    // Per distinct name, its step and exclusion matchers: [the matcher when it filters by property, its bit].
    type Bits = [EventMatcher | undefined, number][];
    const names = new Map<string, { category: string; name: string; steps: Bits; excl: Bits }>();
    const add = (m: EventMatcher, list: 'steps' | 'excl', bit: number) => {
      const key = JSON.stringify([m.category, m.name]);
      const group = names.get(key) ?? { category: m.category, name: m.name, steps: [], excl: [] };
      names.set(key, group);
      group[list].push([hasProps(m) ? m : undefined, bit]);
    };
    query.steps.forEach((m, i) => add(m, 'steps', i));
    exclusions.forEach((m, i) => add(m, 'excl', i));
    events = [...names.values()]
      .map((g) => {
        const mask = (of: Bits) => {
          const constant = of.filter(([m]) => !m).reduce((a, [, bit]) => a | (1 << bit), 0);
          return [String(constant), ...of.flatMap(([m, bit]) => (m ? [`(CASE WHEN ${propsSql(m, p)} THEN ${1 << bit} ELSE 0 END)`] : []))].join(' + ');
        };
        const all = [...g.steps, ...g.excl];
        // A name whose every matcher filters by property: only its events that match one are read.
        const only = all.every(([m]) => m) ? ` AND (${all.map(([m]) => propsSql(m!, p)).join(' OR ')})` : '';
        return scan([mask(g.steps), mask(g.excl)], ` AND e.category = ${p.add(g.category)} AND e.name = ${p.add(g.name)}${only}`);
      })
      .join('\n      UNION ALL ');
  }
  const entry = query.order === 'unordered' ? 'e.m <> 0' : '(e.m & 1) <> 0';
  // Each event's time as seconds since the scan's start (`from`), a float8 (date_part of the
  // interval: one division of its microseconds and one addition of its whole days, each far below
  // half a microsecond for any range this reads), turned back here into exact microseconds and then
  // into ms as (from's µs + µs) / 1000: the same float8 as (extract(epoch …) * 1000)::float8, for a
  // third of the per-row cost of building it in SQL from the minute's epoch and the microseconds.
  const t = `date_part('epoch', e.occurred_at - ${from}::timestamptz)`;
  const baseUs = scope.from.getTime() * 1000;
  // One row per unit that entered in the range, holding its relevant events as lists, so that a
  // unit's events, not every event, cross to JS as one row. Times and step masks cross as
  // comma-separated text: a driver parses an array element by element in JavaScript, a string is
  // split natively (float8's text is the same either way, so the numbers are too). `order`: the
  // lists in time order (then event id), which costs a sort of every row read by unit and time;
  // without it the rows are grouped by hashing and each unit's lists are put in time order here
  // (one aggregate node feeds every list the same rows in the same order, so they stay aligned).
  const read = (order: string, only: string) => `
    SELECT ${unit.expr} AS u, string_agg((${t})::text, ',' ${order}) AS t, string_agg(e.m::text, ',' ${order}) AS m${
      exclusions.length === 0 ? '' : `, array_agg(e.x ${order}) AS x`
    }${query.breakdown === undefined ? '' : `, array_agg(e.b ${order}) AS b`}
      FROM (${events}) e ${unit.join}
     WHERE ${unit.present}${seg}${only}
     GROUP BY 1
    HAVING bool_or(${entry} AND e.occurred_at >= ${from} AND e.occurred_at < ${to})`;
  const rows = await withBudget(db, (q) => q.query<Row>(read('', ''), p.values), { hashGroups: true });
  let count = 0;
  const units: FunnelRun['units'] = [];
  const tied: Row[] = [];
  // A unit's events as columns, parsed into arrays reused from unit to unit (no object per
  // event), and copied into time order when they did not come in it (usually they do: rows come
  // as they were written).
  const raw = new Columns();
  const inOrder = new Columns();
  /**
   * Evaluates one unit's row, or answers false (first pass only) when two of its events share an
   * instant and differ in what the state machine sees: events at one instant go by event id, which
   * did not cross, so such a unit is read again in that order (below; rare: an instant is a µs).
   */
  const evaluate = (r: Row, first: boolean): boolean => {
    const ordered = raw.read(r.t, r.m, baseUs);
    const n = raw.n;
    if (first && (count += n) > MAX_ROWS) throw tooLarge(`more than ${MAX_ROWS} events to evaluate: narrow the range or add a product filter`);
    for (let i = 0; i < n; i++) raw.excl[i] = r.x?.[i] ?? 0;
    let events = raw;
    let order: Int32Array | undefined;
    if (!ordered) {
      order = raw.timeOrder();
      inOrder.fit(n);
      for (let k = 0; k < n; k++) {
        const i = order[k]!;
        inOrder.t[k] = raw.t[i]!;
        inOrder.steps[k] = raw.steps[i]!;
        inOrder.excl[k] = raw.excl[i]!;
      }
      events = inOrder;
    }
    const value = (k: number) => r.b?.[order ? order[k]! : k] ?? null;
    if (first) {
      for (let k = 1; k < n; k++) {
        if (
          events.t[k] === events.t[k - 1] &&
          (events.steps[k] !== events.steps[k - 1] || events.excl[k] !== events.excl[k - 1] || value(k) !== value(k - 1))
        ) {
          return false;
        }
      }
    }
    const result = evaluateUnit(events, rules);
    units.push({ unit: r.u, result, value: result.entry >= 0 ? value(result.entry) : null });
    return true;
  };
  // In slices, the event loop served between them: at 10M events this is over a second of CPU,
  // which would hold up every other request of the process, ingestion included.
  for (let i = 0; i < rows.length; i++) {
    if (!evaluate(rows[i]!, true)) tied.push(rows[i]!);
    if (sliceEnds(i)) await setImmediate();
  }
  if (tied.length > 0) {
    const only = ` AND ${unit.expr} = ANY(${p.add(tied.map((r) => r.u))}::text[])`;
    const ordered = await withBudget(db, (q) => q.query<Row>(read('ORDER BY e.occurred_at, e.event_id', only), p.values));
    for (const r of ordered) evaluate(r, false);
  }
  // The answer's order does not depend on the grouping's.
  units.sort((a, c) => (a.unit < c.unit ? -1 : a.unit > c.unit ? 1 : 0));
  return { scope, query, rules, units };
}

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);
const seconds = (ms: number | null) => (ms === null ? null : Math.round(ms) / 1000);
const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

function stepsOf(q: FunnelQuery, results: UnitResult[]) {
  // One pass: each unit counts at the steps it reached, with its time from the previous one.
  const counts = q.steps.map(() => 0);
  const between: number[][] = q.steps.map(() => []);
  for (const r of results) {
    for (let i = 0; i < r.reached; i++) {
      counts[i]!++;
      if (i > 0) between[i]!.push(r.times[i]! - r.times[i - 1]!);
    }
  }
  return q.steps.map((s, i) => {
    const prev = i === 0 ? counts[0]! : counts[i - 1]!;
    const times = between[i]!;
    return {
      step: i + 1,
      category: s.category,
      name: s.name,
      count: counts[i]!,
      conversion_from_first: ratio(counts[i]!, counts[0]!),
      conversion_from_previous: ratio(counts[i]!, prev),
      dropped: prev - counts[i]!,
      drop_off: i === 0 ? 0 : ratio(prev - counts[i]!, prev),
      median_seconds: seconds(median(times)),
      average_seconds: seconds(mean(times)),
    };
  });
}

function histogram(totals: number[]) {
  if (totals.length === 0) return [];
  // Not Math.min(...totals): a spread of a few hundred thousand arguments overflows the stack.
  const lo = totals.reduce((a, b) => Math.min(a, b));
  const hi = totals.reduce((a, b) => Math.max(a, b));
  const width = Math.max(1000, Math.ceil((hi - lo) / HISTOGRAM_BINS / 1000) * 1000);
  const bins = Array.from({ length: Math.min(HISTOGRAM_BINS, Math.floor((hi - lo) / width) + 1) }, (_, i) => ({
    from_seconds: (lo + i * width) / 1000,
    to_seconds: (lo + (i + 1) * width) / 1000,
    count: 0,
  }));
  for (const t of totals) bins[Math.min(bins.length - 1, Math.floor((t - lo) / width))]!.count++;
  return bins;
}

export async function funnel(db: Db, who: Reader, input: FunnelQuery, now: Date) {
  const { scope, query, units } = await runFunnel(db, who, input, now);
  const results = units.map((u) => u.result);
  const n = query.steps.length;
  const done = results.filter((r) => r.reached === n);
  const totals = done.map((r) => r.times[n - 1]! - r.times[0]!);
  const periods = periodsBetween(scope.from.getTime(), scope.to.getTime(), scope.tz, scope.interval);
  // Each entry's period by binary search over the period starts (no time zone arithmetic per unit).
  const entered = periods.map(() => 0);
  const convertedIn = periods.map(() => 0);
  for (const r of results) {
    if (r.reached === 0) continue;
    let lo = 0;
    let hi = periods.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (periods[mid]! <= r.times[0]!) lo = mid;
      else hi = mid - 1;
    }
    entered[lo]!++;
    if (r.reached === n) convertedIn[lo]!++;
  }
  const trends = periods.map((start, i) => ({
    period_start: new Date(start).toISOString(),
    entered: entered[i]!,
    converted: convertedIn[i]!,
    conversion_rate: ratio(convertedIn[i]!, entered[i]!),
  }));
  const groups = new Map<string | null, UnitResult[]>();
  if (query.breakdown !== undefined) {
    for (const u of units) {
      if (u.result.reached === 0) continue;
      // Pushed, not copied per unit: a copy made one group of 100k units quadratic (minutes of CPU).
      const group = groups.get(u.value);
      if (group) group.push(u.result);
      else groups.set(u.value, [u.result]);
    }
  }
  const breakdown =
    query.breakdown === undefined
      ? null
      : [...groups.entries()]
          .sort((a, b) => b[1].length - a[1].length || String(a[0]).localeCompare(String(b[0])))
          .slice(0, BREAKDOWN_LIMIT)
          .map(([value, rs]) => ({ value, steps: stepsOf(query, rs) }));
  return {
    ...echo(scope),
    refreshed_at: now.toISOString(),
    order: query.order,
    count_by: query.count_by,
    window: query.window,
    steps: stepsOf(query, results),
    entered: results.filter((r) => r.reached > 0).length,
    converted: done.length,
    conversion_rate: ratio(done.length, results.filter((r) => r.reached > 0).length),
    time_to_convert: { median_seconds: seconds(median(totals)), average_seconds: seconds(mean(totals)), histogram: histogram(totals) },
    trends,
    breakdown,
  };
}
