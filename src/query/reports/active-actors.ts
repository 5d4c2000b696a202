import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { checkBuckets, FilterProps, head, Params, previousPeriod, resolveFilters, type Filters, type Principal } from '../filters.js';
import { actorDays } from './actor-days.js';

// Active actors (docs/reports.md): distinct actors per interval; DAU, WAU and MAU per day, rolling
// (the 1, 7 and 30 local days ending that day) and exact; stickiness (DAU/MAU, and how many days
// an actor is active per week or month); lifecycle per interval as PostHog defines it: new (first
// seen ever in that interval), returning (active in the previous one too), resurrecting (not),
// dormant (active in the previous interval, not in this one).

export const ActiveActorsQuery = Type.Object(FilterProps);
export type ActiveActorsParams = Static<typeof ActiveActorsQuery>;

const n = (v: unknown) => Number(v ?? 0);
const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);

async function period(q: Queryable, f: Filters) {
  const s = f.scope;
  const sql = new Params();
  const ad = actorDays(f, sql);
  const tz = sql.p(s.tz);
  const i = s.interval;
  const firstDay = sql.p(ad.firstDay);
  const lastDay = sql.p(ad.lastDay);
  const step = `interval '1 ${i}'`;
  const ctes = `WITH ad AS MATERIALIZED (${ad.sql}),
    days AS (SELECT d::date AS day FROM generate_series(${firstDay}::date, ${lastDay}::date, interval '1 day') d),
    bk AS (SELECT generate_series(date_trunc('${i}', ${firstDay}::date::timestamp), ${lastDay}::date::timestamp, ${step}) AS b),
    ab AS MATERIALIZED (SELECT DISTINCT actor, date_trunc('${i}', day::timestamp) AS b FROM ad),
    fb AS (SELECT a.actor, coalesce(date_trunc('${i}', f.first_seen AT TIME ZONE ${tz}), min(a.b)) AS b
             FROM ab a LEFT JOIN rm_actor_first f ON f.tenant_id = ${sql.p(s.tenantId)} AND f.actor_id = a.actor GROUP BY a.actor, f.first_seen)`;
  // Rolling windows in one pass over the pairs: an actor active on day d, next active on day n,
  // counts in the N-day window ending on each of the days [d, min(n, d + N)), disjoint for its
  // successive days; so +1 at d and -1 at min(n, d + N), summed cumulatively over the days.
  // Lifecycle from each (actor, bucket) with its previous and next active bucket.
  const rows = await q.query<{ part: string; date: string; a: string; b: string; c: string; d: string }>(
    `${ctes},
    nx AS (SELECT day, lead(day) OVER (PARTITION BY actor ORDER BY day) AS n FROM ad),
    delta AS (
      SELECT d, sum(a) AS a, sum(b) AS b, sum(c) AS c FROM (
        SELECT day AS d, 1 AS a, 1 AS b, 1 AS c FROM nx
        UNION ALL SELECT day + 1, -1, 0, 0 FROM nx
        UNION ALL SELECT least(n, day + 7), 0, -1, 0 FROM nx
        UNION ALL SELECT least(n, day + 30), 0, 0, -1 FROM nx) x
       GROUP BY d),
    roll AS (
      SELECT days.day, sum(coalesce(delta.a, 0)) OVER w AS a, sum(coalesce(delta.b, 0)) OVER w AS b, sum(coalesce(delta.c, 0)) OVER w AS c
        FROM (SELECT d::date AS day FROM generate_series((SELECT min(day) FROM ad), ${lastDay}::date, interval '1 day') d) days
        LEFT JOIN delta ON delta.d = days.day WINDOW w AS (ORDER BY days.day)),
    lc AS (
      SELECT ab.b, fb.b AS first, lag(ab.b) OVER (PARTITION BY ab.actor ORDER BY ab.b) AS prev, lead(ab.b) OVER (PARTITION BY ab.actor ORDER BY ab.b) AS next
        FROM ab JOIN fb ON fb.actor = ab.actor),
    lcc AS (
      SELECT b, count(*) FILTER (WHERE first = b) AS a, count(*) FILTER (WHERE first < b AND prev = b - ${step}) AS b2,
             count(*) FILTER (WHERE first < b AND prev IS DISTINCT FROM b - ${step}) AS c, 0 AS d FROM lc GROUP BY b
      UNION ALL
      SELECT b + ${step}, 0, 0, 0, count(*) FROM lc WHERE next IS DISTINCT FROM b + ${step} GROUP BY b + ${step})
     SELECT 'rolling' AS part, to_char(days.day, 'YYYY-MM-DD') AS date, coalesce(roll.a, 0) AS a, coalesce(roll.b, 0) AS b, coalesce(roll.c, 0) AS c, 0 AS d
       FROM days LEFT JOIN roll ON roll.day = days.day
     UNION ALL
     SELECT 'lifecycle', to_char(bk.b, 'YYYY-MM-DD'), coalesce(sum(lcc.a), 0), coalesce(sum(lcc.b2), 0), coalesce(sum(lcc.c), 0), coalesce(sum(lcc.d), 0)
       FROM bk LEFT JOIN lcc ON lcc.b = bk.b GROUP BY bk.b
     UNION ALL
     SELECT 'active', to_char(b, 'YYYY-MM-DD'), count(DISTINCT actor), 0, 0, 0 FROM ad CROSS JOIN LATERAL (SELECT date_trunc('${i}', ad.day::timestamp) AS b) x
      WHERE ad.day >= ${firstDay}::date GROUP BY b
     UNION ALL
     SELECT 'days_active', n::text, count(*), 0, 0, 0 FROM (
       SELECT actor, count(*) AS n FROM ad WHERE ad.day >= ${firstDay}::date GROUP BY actor${i === 'day' ? '' : `, date_trunc('${i}', day::timestamp)`}) x GROUP BY n`,
    sql.values,
  );
  const part = (name: string) =>
    rows.filter((r) => r.part === name).sort((x, y) => (x.part === 'days_active' ? n(x.date) - n(y.date) : x.date.localeCompare(y.date)));
  const active = new Map(part('active').map((r) => [r.date, n(r.a)]));
  const lifecycle = part('lifecycle').map((r) => ({ date: r.date, new: n(r.a), returning: n(r.b), resurrecting: n(r.c), dormant: n(r.d) }));
  const rolling = part('rolling').map((r) => ({ date: r.date, dau: n(r.a), wau: n(r.b), mau: n(r.c), dau_mau: ratio(n(r.a), n(r.c)) }));
  const withMau = rolling.filter((r) => r.mau > 0);
  return {
    source: ad.source,
    data: lifecycle.map((l) => ({ date: l.date, active: active.get(l.date) ?? 0 })),
    rolling,
    lifecycle,
    stickiness: {
      dau_mau: withMau.length === 0 ? 0 : Math.round((withMau.reduce((a, r) => a + r.dau / r.mau, 0) / withMau.length) * 10_000) / 10_000,
      days_active: part('days_active').map((r) => ({ days: n(r.date), actors: n(r.a) })),
    },
  };
}

const empty = { source: 'read_model' as const, data: [], rolling: [], lifecycle: [], stickiness: { dau_mau: 0, days_active: [] } };

export async function activeActors(q: Queryable, principal: Principal, p: ActiveActorsParams, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  const answer = { ...(await head(q, f.scope)), ...(f.scope.empty ? empty : await period(q, f)) };
  if (!f.compare) return answer;
  const prev = previousPeriod(f);
  return {
    ...answer,
    compare: { range: { from: prev.scope.from.toISOString(), to: prev.scope.to.toISOString() }, ...(prev.scope.empty ? empty : await period(q, prev)) },
  };
}
