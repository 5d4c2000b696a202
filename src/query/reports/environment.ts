import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { RESOLVED_ENV_CTE, ENV_FIELD_NAMES, ENV_FIELDS, type EnvField } from '../dimensions.js';
import { FilterProps, head, resolveFilters, segmentWhere, type Principal } from '../filters.js';
import { ACTOR, rawEvents } from '../filters.js';
import { localDate, zonedMidnight } from '../scope.js';
import { actorDaysAnswer, localActorDays, localActorMonths } from './actor-days.js';
import { Params } from '../params.js';

// Environment shares (docs/reports.md): active actors and sessions started in the range, by a
// field of what clients sent in X-Environment-Data or an exception's environment_context (both
// stored in environments; the actor's latest; a session counts under its actor's; under an
// event-level filter, only the sessions of the actors it picks). Values past
// `limit` are summed into one "other" row; no value sent is null.

export const EnvironmentQuery = Type.Object({
  ...(({ compare: _c, ...rest }) => rest)(FilterProps),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
});
export const ENV_FIELD_LIST = ENV_FIELD_NAMES;

export async function environmentShares(q: Queryable, principal: Principal, field: EnvField, p: Static<typeof EnvironmentQuery>, now: Date) {
  const f = await resolveFilters(q, principal, { ...p, interval: p.interval === 'hour' ? 'day' : p.interval }, now);
  const h = await head(q, f.scope);
  if (f.scope.empty) return { ...h, field, data: [] };
  const s = f.scope;
  const sql = new Params();
  // The range's active actors (its whole local days): the read model's actor days when they answer, else raw events.
  const first = localDate(s.from, s.tz);
  const last = localDate(new Date(s.to.getTime() - 1), s.tz);
  // From the month rows (one per actor and month: any active day in the range), else the actor days.
  const months = actorDaysAnswer(f, first, last) ? localActorMonths(f, sql, first, last, 0) : undefined;
  const ad = months
    ? { source: 'read_model' as const, sql: `SELECT DISTINCT a.actor_id AS actor FROM ${months.from}` }
    : actorDaysAnswer(f, first, last)
      ? { source: 'read_model' as const, sql: localActorDays(f, sql, first, last, 'DISTINCT a.actor_id AS actor') }
      : {
          source: 'events' as const,
          sql: rawEvents({ ...f, scope: { ...s, from: zonedMidnight(first.y, first.m, first.d, s.tz) } }, sql, `DISTINCT ${ACTOR} AS actor`),
        };
  const expr = ENV_FIELDS[field];
  const t = sql.add(s.tenantId);
  const sw = [`r.tenant_id = ${sql.add(s.tenantId)}`, `r.started_at >= ${sql.add(s.from)}`, `r.started_at < ${sql.add(s.to)}`];
  if (s.productId) sw.push(`r.product_id = ${sql.add(s.productId)}`);
  if (s.version !== undefined) sw.push(`r.product_version = ${sql.add(s.version)}`);
  if (s.accountId !== undefined) sw.push(`r.account_id = ${sql.add(s.accountId)}`);
  if (s.licenseId !== undefined) sw.push(`r.license_id = ${sql.add(s.licenseId)}`);
  sw.push(segmentWhere(f, sql, 'r.actor_id'));
  // An event-level filter picks actors (those with a matching event): the sessions column counts theirs.
  if (f.category !== undefined || f.name !== undefined || f.properties.length > 0) sw.push('r.actor_id IN (SELECT actor FROM ad)');
  // `ad` is distinct already. Sessions are counted per actor before the join: 200k sessions
  // meet 50k environments as 50k rows (a merge join through rm_sessions_actor read them in actor
  // order: 200 → 90 ms at 10M events).
  const rows = await q.query<{ value: string | null; actors: string; sessions: string }>(
    `WITH ad AS (${ad.sql}), ${RESOLVED_ENV_CTE(t, expr)},
          a AS (SELECT v.value, count(*) AS n FROM ad x LEFT JOIN renv v ON v.actor = x.actor GROUP BY 1),
          s AS (SELECT v.value, sum(c.n) AS n FROM (SELECT r.actor_id, count(*) AS n FROM rm_sessions r WHERE ${sw.join(' AND ')} GROUP BY 1) c
                  LEFT JOIN renv v ON v.actor = c.actor_id GROUP BY 1)
     SELECT value, sum(an) AS actors, sum(sn) AS sessions FROM (SELECT value, n AS an, 0 AS sn FROM a UNION ALL SELECT value, 0, n FROM s) u GROUP BY value`,
    sql.values,
  );
  const all = rows
    .map((r) => ({ value: r.value, actors: Number(r.actors), sessions: Number(r.sessions) }))
    .sort((x, y) => y.actors - x.actors || y.sessions - x.sessions || String(x.value).localeCompare(String(y.value)));
  const limit = p.limit ?? 20;
  const totalActors = all.reduce((a, r) => a + r.actors, 0);
  const share = (n: number) => (totalActors === 0 ? 0 : Math.round((n / totalActors) * 1_000_000) / 10_000);
  const top = all.slice(0, limit).map((r) => ({ ...r, other: false, actor_share: share(r.actors) }));
  const rest = all.slice(limit);
  if (rest.length > 0) {
    const actors = rest.reduce((a, r) => a + r.actors, 0);
    top.push({ value: null, other: true, actors, sessions: rest.reduce((a, r) => a + r.sessions, 0), actor_share: share(actors) });
  }
  return { ...h, field, source: ad.source, data: top };
}
