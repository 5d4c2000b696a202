import type { Queryable } from '../../storage/db.js';
import { SET_SHIFT, SET_BITS } from '../../storage/read-model/session-sets.js';
import { SESSION_STATUS_COUNTS, SESSION_STATUSES } from '../../storage/read-model/tables.js';
import type { Filters } from '../filters.js';
import { Params } from '../params.js';

// Release health from sets of actors (migration 230; docs/reports.md, "Sets of actors as bitmaps"):
// the UTC days wholly inside the range whose sets are current are read as sets (per version, the
// OR of its days' sets, counted by bit_count); the rest of the range (the partial days at its ends
// in any zone, today, days changed since their sets were built) is read from rm_sessions, and an
// actor found there counts only if its bit is not already in the version's set. Exact either way.

const DAY = 86_400_000;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export interface HealthRow {
  product: string;
  product_version: string;
  sessions: string;
  actors: string;
  crashed: string;
  errored: string;
  abnormal: string;
  healthy: string;
  crashed_actors: string;
}

/**
 * Per (product, version) of the filters its sessions by status, distinct actors and actors with a
 * crashed session; and the totals over every version (adoption's denominators). Not for account or
 * license filters (sets carry neither): those read rows. `rowsWhere` is the rows' filter (alias r).
 */
export async function healthFromSets(
  q: Queryable,
  f: Filters,
  rowsWhere: (f: Filters, sql: Params) => string,
): Promise<{ rows: HealthRow[]; totals: { sessions: string; actors: string } }> {
  const s = f.scope;
  const sql = new Params();
  const t = sql.add(s.tenantId);
  // The UTC days wholly inside [from, to): none when the range is shorter than a day.
  const lo = Math.ceil(s.from.getTime() / DAY) * DAY;
  const hi = Math.max(lo, Math.floor(s.to.getTime() / DAY) * DAY);
  const [dlo, dhi] = [sql.add(utcDay(lo)), sql.add(utcDay(hi))];
  // The UTC days the range only partly covers, read as rows with the stale ones: one array (an InitPlan), which the
  // index on day takes as its condition (as a semi-join, or beside the range's bounds, it read every session of the range).
  const ends: string[] = [];
  for (let d = Math.floor(s.from.getTime() / DAY) * DAY; d < lo; d += DAY) ends.push(utcDay(d));
  for (let d = hi; d < s.to.getTime(); d += DAY) ends.push(utcDay(d));
  const product = s.productId ? ` AND product_id = ${sql.add(s.productId)}` : '';
  // Every version (adoption's denominators); the version filter picks the rows answered at the end.
  const rw = rowsWhere({ ...f, scope: { ...s, version: undefined } }, sql);
  const version = s.version !== undefined ? `WHERE v.product_version = ${sql.add(s.version)}` : '';
  const counts = ['sessions', ...SESSION_STATUSES];
  const sums = counts.map((c) => `sum(${c}) AS ${c}`).join(', ');
  const [answer] = await q.query<{ rows: HealthRow[] | null; sessions: string; actors: string }>(
    `WITH st AS (SELECT day FROM rm_session_days_stale WHERE tenant_id = ${t} AND day >= ${dlo}::date AND day < ${dhi}::date),
          sv AS (SELECT product_id, product_version, chunk, ${sums}, bit_or(actors) AS a, bit_or(crashed_actors) AS c FROM rm_session_sets
                  WHERE tenant_id = ${t} AND day >= ${dlo}::date AND day < ${dhi}::date AND day NOT IN (SELECT day FROM st)${product}
                  GROUP BY 1, 2, 3),
          rr AS (SELECT r.product_id, r.product_version, r.actor_id, count(*) AS sessions, ${SESSION_STATUS_COUNTS}, bool_or(r.status = 'crashed') AS crashed_any
                   FROM rm_sessions r
                  WHERE ${rw} AND r.day = ANY(ARRAY(SELECT unnest(${sql.add(ends)}::date[]) UNION ALL SELECT day FROM st))
                  GROUP BY 1, 2, 3),
          ro AS (SELECT rr.*, o.ordinal >> ${SET_SHIFT} AS chunk, o.ordinal & ${SET_BITS - 1} AS bit
                   FROM rr LEFT JOIN rm_actor_ordinals o ON o.tenant_id = ${t} AND o.actor_id = rr.actor_id),
          rv AS (SELECT ro.product_id, ro.product_version, sum(ro.sessions) AS sessions, sum(ro.crashed) AS crashed, sum(ro.errored) AS errored,
                        sum(ro.abnormal) AS abnormal, sum(ro.healthy) AS healthy,
                        count(*) FILTER (WHERE sv.a IS NULL OR ro.bit IS NULL OR get_bit(sv.a, ro.bit) = 0) AS actors,
                        count(*) FILTER (WHERE ro.crashed_any AND (sv.c IS NULL OR ro.bit IS NULL OR get_bit(sv.c, ro.bit) = 0)) AS crashed_actors
                   FROM ro LEFT JOIN sv ON sv.product_id = ro.product_id AND sv.product_version = ro.product_version AND sv.chunk = ro.chunk
                  GROUP BY 1, 2),
          v AS (SELECT product_id, product_version, ${sums}, sum(actors) AS actors, sum(crashed_actors) AS crashed_actors
                  FROM (SELECT product_id, product_version, ${counts.join(', ')}, bit_count(a) AS actors, bit_count(c) AS crashed_actors FROM sv
                        UNION ALL SELECT product_id, product_version, ${counts.join(', ')}, actors, crashed_actors FROM rv) u
                 GROUP BY 1, 2),
          ta AS (SELECT chunk, bit_or(a) AS a FROM sv GROUP BY 1),
          tr AS (SELECT DISTINCT actor_id, chunk, bit FROM ro)
     SELECT (SELECT json_agg(json_build_object('product', p.slug, 'product_version', v.product_version, 'sessions', v.sessions, 'actors', v.actors,
                                              'crashed', v.crashed, 'errored', v.errored, 'abnormal', v.abnormal, 'healthy', v.healthy,
                                              'crashed_actors', v.crashed_actors) ORDER BY v.sessions DESC, v.product_version)
               FROM v JOIN products p ON p.id = v.product_id ${version}) AS rows,
            (SELECT coalesce(sum(sessions), 0) FROM v) AS sessions,
            (SELECT coalesce(sum(bit_count(a)), 0) FROM ta)
            + (SELECT count(*) FROM tr LEFT JOIN ta ON ta.chunk = tr.chunk WHERE ta.a IS NULL OR tr.bit IS NULL OR get_bit(ta.a, tr.bit) = 0) AS actors`,
    sql.values,
  );
  return { rows: answer?.rows ?? [], totals: { sessions: String(answer?.sessions ?? 0), actors: String(answer?.actors ?? 0) } };
}
