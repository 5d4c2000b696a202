import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { BREAKDOWN_DESCRIPTION, ENV_CTE, parseBreakdown, type Breakdown } from '../dimensions.js';
import {
  ACTOR,
  bucketOf,
  bucketSeries,
  checkBuckets,
  FilterProps,
  head,
  label,
  Params,
  previousPeriod,
  rawEvents,
  requireAccountAnswers,
  resolveFilters,
  type Filters,
  type Principal,
} from '../filters.js';

// Trends: event counts and unique actors per interval, with at most one breakdown, its top N
// values and "other" (PostHog's trends with math total and dau, breakdown_limit and the "other"
// aggregation). Exact: counted from raw events in the time zone's own buckets.

export const TrendsQuery = Type.Object({
  ...FilterProps,
  breakdown: Type.Optional(Type.String({ minLength: 1, maxLength: 80, description: BREAKDOWN_DESCRIPTION })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'breakdown values shown; the rest are summed into one "other" series' }),
  ),
});
export type TrendsParams = Static<typeof TrendsQuery>;

export interface Point {
  date: string;
  events: number;
  actors: number;
}
export interface Series {
  breakdown_value: string | null;
  other: boolean;
  total: { events: number; actors: number };
  data: Point[];
}

/** The series of one period: per breakdown value (top N by events, then "other"), every bucket filled. */
async function series(q: Queryable, f: Filters, b: Breakdown | undefined, limit: number): Promise<Series[]> {
  const s = f.scope;
  if (s.empty) return [];
  const sql = new Params();
  const key = !b ? 'NULL::text' : b.propertyKey !== undefined ? `e.properties ->> ${sql.p(b.propertyKey)}` : b.expr;
  const env = b?.env ? `LEFT JOIN env v ON v.actor_id = e.actor_id` : '';
  const rows = await q.query<{ date: string | null; k: string | null; o: boolean; events: string; actors: string }>(
    `WITH ${b?.env ? ENV_CTE(sql.p(s.tenantId)) + ',' : ''}
     ev AS MATERIALIZED (${rawEvents(f, sql, `${bucketOf('e.occurred_at', sql, s)} AS b, ${key} AS k, ${ACTOR} AS actor`, env)}),
     top AS (SELECT k FROM ev GROUP BY k ORDER BY count(*) DESC, k NULLS LAST LIMIT ${sql.p(limit)}),
     m AS (SELECT b, actor, NOT EXISTS (SELECT 1 FROM top t WHERE t.k IS NOT DISTINCT FROM ev.k) AS o, ev.k FROM ev)
     SELECT ${label('b', s)} AS date, CASE WHEN o THEN NULL ELSE k END AS k, o, count(*) AS events, count(DISTINCT actor) AS actors
       FROM m GROUP BY GROUPING SETS ((o, CASE WHEN o THEN NULL ELSE k END, b), (o, CASE WHEN o THEN NULL ELSE k END))`,
    sql.values,
  );
  const labels = await bucketLabels(q, f);
  const byKey = new Map<string, Series>();
  for (const r of rows) {
    const id = JSON.stringify([r.o, r.k]);
    let one = byKey.get(id);
    if (!one)
      byKey.set(
        id,
        (one = { breakdown_value: r.k, other: r.o, total: { events: 0, actors: 0 }, data: labels.map((date) => ({ date, events: 0, actors: 0 })) }),
      );
    const counts = { events: Number(r.events), actors: Number(r.actors) };
    if (r.date === null) one.total = counts;
    else {
      const point = one.data.find((p) => p.date === r.date);
      if (point) Object.assign(point, counts);
    }
  }
  if (!b && byKey.size === 0)
    byKey.set('none', { breakdown_value: null, other: false, total: { events: 0, actors: 0 }, data: labels.map((date) => ({ date, events: 0, actors: 0 })) });
  return [...byKey.values()].sort(
    (x, y) => Number(x.other) - Number(y.other) || y.total.events - x.total.events || String(x.breakdown_value).localeCompare(String(y.breakdown_value)),
  );
}

export async function bucketLabels(q: Queryable, f: Filters): Promise<string[]> {
  const sql = new Params();
  const rows = await q.query<{ date: string }>(`SELECT ${label('b', f.scope)} AS date FROM (${bucketSeries(sql, f.scope)}) x ORDER BY b`, sql.values);
  return rows.map((r) => r.date);
}

export async function trends(q: Queryable, principal: Principal, p: TrendsParams, now: Date) {
  const b = parseBreakdown(p.breakdown);
  if (b?.account) requireAccountAnswers(principal);
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  const limit = p.limit ?? 10;
  const answer = { ...(await head(q, f.scope)), breakdown: p.breakdown ?? null, series: await series(q, f, b, limit) };
  if (!f.compare) return answer;
  const prev = previousPeriod(f);
  return { ...answer, compare: { range: { from: prev.scope.from.toISOString(), to: prev.scope.to.toISOString() }, series: await series(q, prev, b, limit) } };
}
