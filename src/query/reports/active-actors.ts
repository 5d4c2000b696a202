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
  const rows = await q.query<{ part: string; date: string; a: string; b: string; c: string; d: string }>(
    `${ctes}
     SELECT 'rolling' AS part, to_char(days.day, 'YYYY-MM-DD') AS date,
            count(DISTINCT ad.actor) FILTER (WHERE ad.day = days.day) AS a,
            count(DISTINCT ad.actor) FILTER (WHERE ad.day > days.day - 7) AS b,
            count(DISTINCT ad.actor) AS c, 0 AS d
       FROM days LEFT JOIN ad ON ad.day > days.day - 30 AND ad.day <= days.day GROUP BY days.day
     UNION ALL
     SELECT 'lifecycle', to_char(bk.b, 'YYYY-MM-DD'),
            count(*) FILTER (WHERE cur.actor IS NOT NULL AND fb.b = bk.b),
            count(*) FILTER (WHERE cur.actor IS NOT NULL AND fb.b < bk.b AND prev.actor IS NOT NULL),
            count(*) FILTER (WHERE cur.actor IS NOT NULL AND fb.b < bk.b AND prev.actor IS NULL),
            count(x.actor) FILTER (WHERE cur.actor IS NULL)
       FROM bk LEFT JOIN LATERAL (
              SELECT coalesce(c.actor, p.actor) AS actor FROM (SELECT actor FROM ab WHERE b = bk.b) c
                FULL JOIN (SELECT actor FROM ab WHERE b = bk.b - ${step}) p ON p.actor = c.actor) x ON true
       LEFT JOIN ab cur ON cur.actor = x.actor AND cur.b = bk.b
       LEFT JOIN ab prev ON prev.actor = x.actor AND prev.b = bk.b - ${step}
       LEFT JOIN fb ON fb.actor = x.actor
      GROUP BY bk.b
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
