import type { Db } from '../../storage/db.js';
import type { Reader } from '../guard.js';
import { echo, resolveScope, type ScopeParams } from '../scope.js';
import { checkRange, withBudget } from './budget.js';
import { scopeSql, unitSql } from './event-sql.js';
import { segmentClause } from './segments.js';
import { Params } from '../params.js';

// Paths (docs/behaviour.md): the K events an actor did right after (or before) each occurrence of
// a given event in the range, identity links applied, grouped into whole paths, the top N by
// occurrences. A path shorter than K ended there (the actor did nothing more in the range).

export interface PathsQuery extends ScopeParams {
  category: string;
  name: string;
  direction?: 'next' | 'previous' | undefined;
  steps?: number | undefined;
  limit?: number | undefined;
  segment_id?: string | undefined;
}

export async function paths(db: Db, who: Reader, q: PathsQuery, now: Date) {
  const scope = await resolveScope(db, who.tenant, q, now);
  const k = q.steps ?? 3;
  const direction = q.direction ?? 'next';
  const limit = q.limit ?? 10;
  const base = { ...echo(scope), refreshed_at: now.toISOString(), event: { category: q.category, name: q.name }, direction, steps: k };
  if (scope.empty) return { ...base, occurrences: 0, paths: [] };
  checkRange(db, scope.from.getTime(), scope.to.getTime());
  const p = new Params();
  const unit = unitSql('actor');
  const where = scopeSql(scope, p);
  const seg = await segmentClause(db, who, q.segment_id, 'actor', unit.expr, p, now);
  const [from, to, cat, name] = [p.add(scope.from), p.add(scope.to), p.add(q.category), p.add(q.name)];
  const tid = p.add(scope.tenantId);
  const next = direction === 'next';
  // The i-th event after (before) an occurrence at position o of its unit's sequence: o ± i. An
  // index past either end is NULL in PostgreSQL: the path ended there.
  const cols = Array.from({ length: k }, (_, i) => {
    const at = `z.o ${next ? '+' : '-'} ${i + 1}`;
    return `s.c[${at}] AS c${i}, s.n[${at}] AS n${i}`;
  }).join(', ');
  const groups = Array.from({ length: k }, (_, i) => `c${i}, n${i}`).join(', ');
  const order = 'ORDER BY e.occurred_at, e.event_id';
  // anchors: the units that did the event in the range (found through events_by_name), with the
  // time of their first (next) or last (previous) occurrence: no path reaches past it, so only
  // their events on that side of it are read. ids: every actor id whose events count for one of
  // them (the unit itself unless it is linked away, and the anonymous ids linked to it), with the
  // unit's number and that time; map: the same rows out of three arrays (of one aggregate pass, so
  // aligned), which the planner counts as a few rows, so that it hashes them and streams the
  // events through one join on the raw actor_id (not a join with the links and another on the
  // unit per event). Each unit's events become two arrays in time order (one sort of the rows
  // read, keyed on the unit's number), and each occurrence is found by its position in them
  // (array_positions, in C: no row per event).
  const sql = `
    WITH anchors AS (
      SELECT ${unit.expr} AS u, ${next ? 'min' : 'max'}(e.occurred_at) AS edge
        FROM events e ${unit.join}
       WHERE ${scopeSql(scope, p, true)}${seg} AND e.category = ${cat} AND e.name = ${name} AND e.occurred_at >= ${from} AND e.occurred_at < ${to}
       GROUP BY 1),
    units AS (SELECT a.u, a.edge, (row_number() OVER ())::int AS id FROM anchors a),
    ids AS MATERIALIZED (
      SELECT r.actor_id, u.id, u.edge
        FROM (SELECT a.u AS actor_id FROM anchors a
              UNION SELECT l.anonymous_actor_id FROM anchors a JOIN actor_links l ON l.tenant_id = ${tid} AND l.identified_actor_id = a.u) r
        LEFT JOIN actor_links l ON l.tenant_id = ${tid} AND l.anonymous_actor_id = r.actor_id
        JOIN units u ON u.u = COALESCE(l.identified_actor_id, r.actor_id)),
    map AS (
      SELECT m.* FROM (SELECT array_agg(actor_id) AS a, array_agg(id) AS i, array_agg(edge) AS t FROM ids) x
       CROSS JOIN LATERAL unnest(x.a, x.i, x.t) AS m(actor_id, id, edge)),
    seqs AS (
      SELECT m.id AS u, array_agg(e.category ${order}) AS c, array_agg(e.name ${order}) AS n
        FROM events e JOIN map m ON m.actor_id = e.actor_id
       WHERE ${where} AND e.occurred_at >= ${from} AND e.occurred_at < ${to} AND e.occurred_at ${next ? '>=' : '<='} m.edge
       GROUP BY m.id),
    walked AS (
      SELECT s.u, ${cols}
        FROM seqs s CROSS JOIN LATERAL unnest(array_positions(s.n, ${name}::text)) AS z(o)
       WHERE s.c[z.o] = ${cat})
    SELECT ${groups}, count(*)::int AS occurrences, count(DISTINCT u)::int AS actors, sum(count(*)) OVER ()::int AS total
      FROM walked
     GROUP BY ${groups} ORDER BY occurrences DESC, actors DESC, ${groups} LIMIT ${p.add(limit)}::int`;
  const rows = await withBudget(db, (tx) => tx.query<Record<string, string | number | null>>(sql, p.values));
  return {
    ...base,
    occurrences: Number(rows[0]?.total ?? 0),
    paths: rows.map((r) => {
      const events: { category: string; name: string }[] = [];
      for (let i = 0; i < k && r[`c${i}`] !== null; i++) events.push({ category: String(r[`c${i}`]), name: String(r[`n${i}`]) });
      return { events, occurrences: Number(r.occurrences), actors: Number(r.actors) };
    }),
  };
}
