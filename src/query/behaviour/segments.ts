import { AppError, notFound, validationError } from '../../errors.js';
import type { Db, Queryable } from '../../storage/db.js';
import { addStaticMembers, getSegment, insertSegment } from '../../storage/segments.js';
import { requireAccountAnswers, requireFeature, type Reader, type TenantPlan } from '../guard.js';
import { cursorKey, pageOf } from '../page.js';
import { asOf, checkLatest, isLocalMidnight, localDate, resolveRange, resolveScope, type Scope, type ScopeParams } from '../scope.js';
import { monthRowsWhere, monthTerms, termsAny, type MonthTerm } from '../reports/month-terms.js';
import { checkRange, withBudget } from './budget.js';
import { matchSql, scopeSql, type EventMatcher } from './event-sql.js';
import { Params } from '../params.js';

// Segments (docs/behaviour.md): a saved set of actors. A dynamic segment is a definition
// evaluated when used, over its own range (a relative range like 30d moves with time): actors
// with an event in the scope and range, who did each listed event at least N times, first seen in
// the range (the read model's rm_actor_first), on a version. A static one is a saved list of
// actors ("save as segment" from a drill-down). segmentFilterSql is the one filter every query
// family applies for `segment_id`.

export interface SegmentDefinition extends ScopeParams {
  did?: (EventMatcher & { min_count?: number | undefined })[] | undefined;
  first_seen_in_range?: boolean | undefined;
  on_version?: string | undefined;
}

/** Checks a definition as a query would resolve it (time zone, range, plan): a 400 or 402/403 now, not at use. */
export function checkDefinition(tenant: TenantPlan, def: SegmentDefinition, now: Date): void {
  try {
    resolveRange(def, now);
    checkLatest(def);
  } catch (err) {
    // The fields are the definition's, inside the body (as the schema's own errors name them).
    if (err instanceof AppError && err.code === 'validation_error' && err.errors)
      throw validationError(err.errors.map((e) => ({ ...e, field: `definition.${e.field}` })));
    throw err;
  }
  if (def.account_id !== undefined || def.license_id !== undefined) requireFeature(tenant, 'account_context');
}

/** What a segment's SQL reads: the read model (set when it does) or raw events. */
type Reads = { readModel: boolean };

async function membersSql(q: Queryable, who: Reader, def: SegmentDefinition, p: Params, now: Date, reads?: Reads): Promise<string> {
  // A definition by account or license is a per-account answer, whoever saved it.
  if (def.account_id !== undefined || def.license_id !== undefined) requireAccountAnswers(who);
  const scope = await resolveScope(q, who.tenant, def, now);
  if (scope.empty) return 'SELECT NULL::text AS u WHERE false';
  const did = def.did ?? [];
  // "First seen in the range": the read model's first event of each actor (its parameters added only when it is asked for).
  const firstSeen = () =>
    def.first_seen_in_range
      ? ` AND EXISTS (SELECT 1 FROM rm_actor_first f WHERE f.tenant_id = ${p.add(scope.tenantId)} AND f.actor_id = g.u AND f.first_seen >= ${p.add(scope.from)} AND f.first_seen < ${p.add(scope.to)})`
      : '';
  // No event condition: the actors with an event in the range, from the read model when it answers.
  const terms = did.length === 0 && def.on_version === undefined ? activeTerms(scope, now) : undefined;
  if (terms) {
    if (reads) reads.readModel = true;
    const active = `SELECT DISTINCT a.actor_id AS u FROM rm_actor_months a WHERE ${monthRowsWhere(scope, p, terms).join(' AND ')} AND ${termsAny(terms)}`;
    return `SELECT g.u FROM (${active}) g WHERE true${firstSeen()}`;
  }
  const where = scopeSql(scope, p, did.length > 0);
  const [tenantId, from, to] = [p.add(scope.tenantId), p.add(scope.from), p.add(scope.to)];
  // Counted per raw actor id first (one hash aggregate over the events read, no join per event),
  // then per unit: an anonymous id linked by identify adds its counts to the identified actor's.
  const counts: string[] = [];
  const having = ['true'];
  const matched: string[] = [];
  did.forEach((d, i) => {
    const m = matchSql(d, p);
    matched.push(m);
    counts.push(`count(*) FILTER (WHERE ${m}) AS c${i}`);
    having.push(`sum(x.c${i}) >= ${p.add(d.min_count ?? 1)}::int`);
  });
  if (def.on_version !== undefined) {
    const v = `e.product_version = ${p.add(def.on_version)}`;
    matched.push(v);
    counts.push(`bool_or(${v}) AS v`);
    having.push('bool_or(x.v)');
  }
  // With a "did" condition (at least once) only the events it names can decide: read just those
  // (through events_by_name, on PostgreSQL from the index alone), and the version's events for on_version.
  const only = did.length > 0 ? ` AND (${matched.join(' OR ')})` : '';
  return `SELECT g.u FROM (SELECT COALESCE(l.identified_actor_id, x.actor_id) AS u
            FROM (SELECT e.actor_id${counts.map((c) => `, ${c}`).join('')} FROM events e
                   WHERE ${where} AND e.occurred_at >= ${from} AND e.occurred_at < ${to}${only} GROUP BY 1) x
            LEFT JOIN actor_links l ON l.tenant_id = ${tenantId} AND l.anonymous_actor_id = x.actor_id
           GROUP BY 1 HAVING ${having.join(' AND ')}) g WHERE true${firstSeen()}`;
}

/**
 * The actors with an event in the scope and range can come from the read model's month rows (one
 * per actor and UTC month, its active UTC hours per day, under the identified id) when the range
 * runs from a local midnight to one (or to now: its current day counts whole, as in the reports),
 * in a zone whose local midnights are whole UTC hours, with no version filter: the range's local
 * days as per-month terms, or undefined (raw events answer).
 */
function activeTerms(scope: Scope, now: Date): MonthTerm[] | undefined {
  if (scope.version !== undefined) return undefined;
  if (!isLocalMidnight(scope.from, scope.tz) || !(isLocalMidnight(scope.to, scope.tz) || scope.to.getTime() >= now.getTime())) return undefined;
  const terms = monthTerms(scope.tz, localDate(scope.from, scope.tz), localDate(new Date(scope.to.getTime() - 1), scope.tz));
  return terms && terms.length > 0 ? terms : undefined;
}

/**
 * The actors of a segment as a subquery `SELECT u …` (placeholders in p), for `AND actor IN (…)`.
 * 404 not_found for an unknown id or another tenant's.
 */
export async function segmentFilterSql(q: Queryable, who: Reader, segmentId: string, p: Params, now: Date, reads?: Reads): Promise<string> {
  const seg = await getSegment(q, who.tenant.id, segmentId);
  if (!seg) throw notFound('not_found', 'segment');
  if (seg.static) return `SELECT actor_id AS u FROM segment_members WHERE tenant_id = ${p.add(who.tenant.id)} AND segment_id = ${p.add(seg.id)}::uuid`;
  return membersSql(q, who, seg.definition as SegmentDefinition, p, now, reads);
}

/** `AND <unit> IN (segment)` for a query counting by actor; segments hold actors, so other units are a 400. */
export async function segmentClause(
  q: Queryable,
  who: Reader,
  segmentId: string | undefined,
  countBy: string,
  unitExpr: string,
  p: Params,
  now: Date,
): Promise<string> {
  if (segmentId === undefined) return '';
  if (countBy !== 'actor') throw validationError([{ field: 'segment_id', message: 'a segment holds actors: count_by actor only' }]);
  return ` AND ${unitExpr} IN (${await segmentFilterSql(q, who, segmentId, p, now)})`;
}

async function rangeOf(db: Db, who: Reader, segmentId: string, now: Date) {
  const seg = await getSegment(db, who.tenant.id, segmentId);
  if (!seg) throw notFound('not_found', 'segment');
  const def = seg.definition as SegmentDefinition;
  if (!seg.static) {
    const r = resolveRange(def, now);
    checkRange(db, r.from.getTime(), r.to.getTime());
    return { range: { from: r.from.toISOString(), to: r.to.toISOString() }, tz: r.tz };
  }
  return { range: null, tz: null };
}

export async function segmentSize(db: Db, who: Reader, segmentId: string, now: Date) {
  const echo = await rangeOf(db, who, segmentId, now);
  const p = new Params();
  const reads: Reads = { readModel: false };
  const sql = `SELECT count(*)::int AS n FROM (${await segmentFilterSql(db, who, segmentId, p, now, reads)}) s`;
  const [r] = await withBudget(db, (q) => q.query<{ n: number }>(sql, p.values));
  return { segment_id: segmentId, size: Number(r?.n ?? 0), ...echo, refreshed_at: await asOf(db, who.tenant.id, reads.readModel, now) };
}

export async function segmentActorIds(
  db: Db,
  who: Reader,
  segmentId: string,
  now: Date,
  page?: { limit: number; after?: string | undefined },
  reads?: Reads,
): Promise<string[]> {
  const p = new Params();
  const inner = await segmentFilterSql(db, who, segmentId, p, now, reads);
  const after = page?.after !== undefined ? `WHERE s.u > ${p.add(page.after)}` : '';
  const limit = page ? `LIMIT ${p.add(page.limit + 1)}::int` : 'LIMIT 100000';
  const rows = await withBudget(db, (q) => q.query<{ u: string }>(`SELECT s.u FROM (${inner}) s ${after} ORDER BY s.u ${limit}`, p.values));
  return rows.map((r) => r.u);
}

export async function segmentActors(db: Db, who: Reader, segmentId: string, p: { limit?: number | undefined; cursor?: string | undefined }, now: Date) {
  const echo = await rangeOf(db, who, segmentId, now);
  const limit = p.limit ?? 50;
  const reads: Reads = { readModel: false };
  const ids = await segmentActorIds(db, who, segmentId, now, { limit, after: cursorKey(p.cursor, ['text'])?.[0] }, reads);
  return {
    segment_id: segmentId,
    ...pageOf(
      ids.map((id) => ({ id })),
      limit,
      (r) => [r.id],
    ),
    ...echo,
    refreshed_at: await asOf(db, who.tenant.id, reads.readModel, now),
  };
}

/** Every actor of the segment (up to 100,000, the CSV), with what the paged answer echoes. */
export async function allSegmentActors(db: Db, who: Reader, segmentId: string, now: Date) {
  const echo = await rangeOf(db, who, segmentId, now);
  const reads: Reads = { readModel: false };
  const ids = await segmentActorIds(db, who, segmentId, now, undefined, reads);
  return { ids, ...echo, refreshed_at: await asOf(db, who.tenant.id, reads.readModel, now) };
}

/** "Save as segment": a drill-down's whole list becomes a static segment of actors. */
export async function saveAsSegment(
  db: Db,
  tenant: { id: string },
  save: { name: string; description?: string | undefined },
  ids: string[],
  countBy: string,
  now: Date,
): Promise<string> {
  if (countBy !== 'actor') throw validationError([{ field: 'save_as_segment', message: 'a segment holds actors: count_by actor only' }]);
  return db.tx(async (q) => {
    const seg = await insertSegment(q, tenant.id, { ...save, definition: { actors: ids.length, saved_at: now.toISOString() }, static: true }, now);
    await addStaticMembers(q, tenant.id, seg.id, ids);
    return seg.id;
  });
}
