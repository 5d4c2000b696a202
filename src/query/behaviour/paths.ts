import type { Db } from '../../storage/db.js';
import type { TenantPlan } from '../guard.js';
import { echo, resolveScope, type ScopeParams } from '../scope.js';
import { checkRange, withBudget } from './budget.js';
import { Params, scopeSql, unitSql } from './event-sql.js';
import { segmentClause } from './segments.js';

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

export async function paths(db: Db, tenant: TenantPlan & { id: string }, q: PathsQuery, now: Date) {
  const scope = await resolveScope(db, tenant, q, now);
  const k = q.steps ?? 3;
  const direction = q.direction ?? 'next';
  const limit = q.limit ?? 10;
  const base = { ...echo(scope), refreshed_at: now.toISOString(), event: { category: q.category, name: q.name }, direction, steps: k };
  if (scope.empty) return { ...base, occurrences: 0, paths: [] };
  checkRange(db, scope.from.getTime(), scope.to.getTime());
  const p = new Params();
  const unit = unitSql('actor');
  const where = scopeSql(scope, p);
  const seg = await segmentClause(db, tenant, q.segment_id, 'actor', unit.expr, p, now);
  const [from, to, cat, name] = [p.add(scope.from), p.add(scope.to), p.add(q.category), p.add(q.name)];
  const next = direction === 'next';
  // The i-th event after (before) an occurrence at ordinal o of its unit's sequence: o ± i. An
  // index past either end is NULL in PostgreSQL: the path ended there.
  const cols = Array.from({ length: k }, (_, i) => {
    const at = `z.o ${next ? '+' : '-'} ${i + 1}`;
    return `s.c[${at}] AS c${i}, s.n[${at}] AS n${i}`;
  }).join(', ');
  const groups = Array.from({ length: k }, (_, i) => `c${i}, n${i}`).join(', ');
  const order = 'ORDER BY e.occurred_at, e.event_id';
  // The units that did the event in the range (found through events_by_name), with the time of
  // their first (next) or last (previous) occurrence: no path reaches past it, so only their events
  // on that side of it are read. Each unit's events become two arrays in time order (one sort of
  // the rows read, then a single pass: no window function over every event), and each occurrence
  // is found by its ordinal in them. The sort and the distinct count key on a number per unit, not
  // its id: the sort compares fewer bytes.
  const sql = `
    WITH anchors AS (
      SELECT ${unit.expr} AS u, ${next ? 'min' : 'max'}(e.occurred_at) AS edge, row_number() OVER () AS id
        FROM events e ${unit.join}
       WHERE ${where}${seg} AND e.category = ${cat} AND e.name = ${name} AND e.occurred_at >= ${from} AND e.occurred_at < ${to}
       GROUP BY 1),
    seqs AS (
      SELECT a.id AS u, array_agg(e.category ${order}) AS c, array_agg(e.name ${order}) AS n
        FROM events e ${unit.join} JOIN anchors a ON a.u = ${unit.expr}
       WHERE ${where} AND e.occurred_at >= ${from} AND e.occurred_at < ${to} AND e.occurred_at ${next ? '>=' : '<='} a.edge
       GROUP BY a.id),
    walked AS (
      SELECT s.u, ${cols}
        FROM seqs s CROSS JOIN LATERAL unnest(s.c, s.n) WITH ORDINALITY AS z(category, name, o)
       WHERE z.category = ${cat} AND z.name = ${name})
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
