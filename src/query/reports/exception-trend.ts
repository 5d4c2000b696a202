import { Type, type Static } from 'typebox';
import { notFound } from '../../errors.js';
import type { Queryable } from '../../storage/db.js';
import { iso } from '../../storage/rows.js';
import { checkBuckets, label, recordWhere, RecordFilterProps, resolveFilters, withCompare, type Filters, type Principal } from '../filters.js';
import { bucketLabels } from './buckets.js';
import { Params } from '../params.js';

// One exception group (a fingerprint): its occurrences and affected actors per interval in the
// range, and its first and last version over all time (GET /v1/exceptions keeps its list as it
// was). From the stored exceptions: exact and current.

export const ExceptionTrendQuery = Type.Object(RecordFilterProps);

export async function exceptionTrend(q: Queryable, principal: Principal, fingerprint: string, p: Static<typeof ExceptionTrendQuery>, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  return withCompare(q, f, true, (g) => trendOf(q, g, fingerprint));
}

async function trendOf(q: Queryable, f: Filters, fingerprint: string) {
  const s = f.scope;
  const all = new Params();
  const [group] = await q.query<{ exception_type: string; first_seen: Date; last_seen: Date; first_version: string; last_version: string; count: string }>(
    `SELECT (array_agg(exception_type ORDER BY occurred_at DESC))[1] AS exception_type, min(occurred_at) AS first_seen, max(occurred_at) AS last_seen,
            (array_agg(product_version ORDER BY occurred_at))[1] AS first_version, (array_agg(product_version ORDER BY occurred_at DESC))[1] AS last_version, count(*) AS count
       FROM exceptions WHERE tenant_id = ${all.add(s.tenantId)} AND fingerprint = ${all.add(fingerprint)}${s.productId ? ` AND product_id = ${all.add(s.productId)}` : ''} HAVING count(*) > 0`,
    all.values,
  );
  if (!group || s.empty) throw notFound('not_found', 'exception group');
  const sql = new Params();
  const where = [...recordWhere(f, sql, 'occurred_at', 'e'), `e.fingerprint = ${sql.add(fingerprint)}`].join(' AND ');
  const rows = await q.query<{ date: string | null; count: string; actors: string; fatal: string }>(
    `SELECT ${label(`date_trunc('${s.interval}', e.occurred_at AT TIME ZONE ${sql.add(s.tz)})`, s)} AS date, count(*) AS count,
            count(DISTINCT coalesce(l.identified_actor_id, e.actor_id)) AS actors, count(*) FILTER (WHERE e.severity = 'fatal') AS fatal
       FROM exceptions e LEFT JOIN actor_links l ON l.tenant_id = e.tenant_id AND l.anonymous_actor_id = e.actor_id
      WHERE ${where} GROUP BY GROUPING SETS ((1), ())`,
    sql.values,
  );
  const total = rows.find((r) => r.date === null);
  const byDate = new Map(rows.filter((r) => r.date !== null).map((r) => [r.date!, r]));
  const point = (r: { count: string; actors: string; fatal: string } | undefined) => ({
    count: Number(r?.count ?? 0),
    fatal: Number(r?.fatal ?? 0),
    actors: Number(r?.actors ?? 0),
  });
  return {
    fingerprint,
    exception_type: group.exception_type,
    first_seen: iso(group.first_seen)!,
    last_seen: iso(group.last_seen)!,
    first_version: group.first_version,
    last_version: group.last_version,
    total: point(total),
    data: (await bucketLabels(q, f)).map((date) => ({ date, ...point(byDate.get(date)) })),
  };
}
