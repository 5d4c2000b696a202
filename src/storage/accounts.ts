import type { Queryable } from './db.js';
import { iso } from './rows.js';
import { inWindowSql, windowMonths, windowMonthsSql } from './read-model/tables.js';

// Reads for the account and license endpoints: snapshots for lists, the read model within the
// tenant's window for one account or license. Every function takes the tenant first.

/** The window of a tenant never refreshed: after every day, so that it holds nothing. */
export const NO_WINDOW = '9999-12-31';

export interface RollupInfo {
  refreshed_at: string;
  window_start: string;
}

export async function rollupInfo(q: Queryable, tenantId: string): Promise<RollupInfo | undefined> {
  const [r] = await q.query<{ refreshed_at: Date; window_start: string }>(
    'SELECT refreshed_at, window_start::text AS window_start FROM tenant_rollups WHERE tenant_id = $1',
    [tenantId],
  );
  return r ? { refreshed_at: iso(r.refreshed_at)!, window_start: r.window_start } : undefined;
}

const num = (v: unknown) => Number(v ?? 0);

export interface Snapshot {
  id: string;
  accounts: number;
  licenses: number;
  events: number;
  sessions: number;
  exceptions: number;
  active_actors: number;
  products: number;
  first_seen: string | null;
  last_seen: string | null;
}

/** Lists built into one account's or license's snapshot row at refresh time (rollups.ts, refreshDetail). */
export interface Detail {
  products: Awaited<ReturnType<typeof productsOf>>;
  versions: Awaited<ReturnType<typeof versionsOf>>;
  counterparts: Awaited<ReturnType<typeof counterpartsOf>>;
  days: Awaited<ReturnType<typeof dailyActivity>> | null;
}

function snapshotRow(r: Record<string, unknown>, kind: 'account_id' | 'license_id'): Snapshot {
  return {
    id: r[kind] as string,
    accounts: num(r.accounts),
    licenses: num(r.licenses),
    events: num(r.events),
    sessions: num(r.sessions),
    exceptions: num(r.exceptions),
    active_actors: num(r.active_actors),
    products: num(r.products),
    first_seen: iso(r.first_seen),
    last_seen: iso(r.last_seen),
  };
}

export async function listSnapshot(
  q: Queryable,
  tenantId: string,
  kind: 'account_id' | 'license_id',
  after: string | undefined,
  limit: number,
): Promise<Snapshot[]> {
  const table = kind === 'account_id' ? 'ru_accounts' : 'ru_licenses';
  const rows = await q.query(`SELECT ${columns(kind)} FROM ${table} WHERE tenant_id = $1 AND ($2::text IS NULL OR ${kind} > $2) ORDER BY ${kind} LIMIT $3`, [
    tenantId,
    after ?? null,
    limit,
  ]);
  return rows.map((r) => snapshotRow(r, kind));
}

/** One account's or license's snapshot, with its detail lists (null until the tenant's first refresh after migration 090). */
export async function getSnapshot(
  q: Queryable,
  tenantId: string,
  kind: 'account_id' | 'license_id',
  id: string,
): Promise<(Snapshot & { detail: Detail | null }) | undefined> {
  const table = kind === 'account_id' ? 'ru_accounts' : 'ru_licenses';
  const [r] = await q.query(`SELECT ${columns(kind)}, detail FROM ${table} WHERE tenant_id = $1 AND ${kind} = $2`, [tenantId, id]);
  return r ? { ...snapshotRow(r, kind), detail: detailOf(r.detail) } : undefined;
}

/** A snapshot's columns but its detail (lists read many rows and need none). */
const columns = (kind: 'account_id' | 'license_id') =>
  `${kind}, ${kind === 'account_id' ? 'licenses' : 'accounts'}, events, sessions, exceptions, active_actors, products, first_seen, last_seen`;

// jsonb's timestamps carry the session's offset; the API's are ISO UTC like every other.
function detailOf(d: unknown): Detail | null {
  if (!d) return null;
  const j = (typeof d === 'string' ? JSON.parse(d) : d) as Detail;
  return {
    ...j,
    counterparts: j.counterparts.map((c) => ({ ...c, first_seen: iso(c.first_seen), last_seen: iso(c.last_seen) })),
  };
}

type Scope = { tenantId: string; kind: 'account_id' | 'license_id'; id: string; windowStart: string };
const where = (s: Scope) => `tenant_id = $1 AND ${s.kind} = $2 AND ${inWindowSql('day', '$3')}`;
const args = (s: Scope) => [s.tenantId, s.id, s.windowStart];

// All from the read model (storage/read-model): rm_usage_days for counts by account, license,
// product and version; rm_feature_days for (category, name); rm_actor_days for distinct actors.
// Deltas not yet compacted are summed like compacted rows.

export async function productsOf(q: Queryable, s: Scope) {
  const rows = await q.query(
    `SELECT p.slug AS product, u.product_id, u.events, u.sessions
       FROM (SELECT product_id, sum(events) AS events, sum(sessions) AS sessions FROM rm_usage_days WHERE ${where(s)} GROUP BY product_id HAVING sum(events) > 0) u
       JOIN products p ON p.id = u.product_id
      ORDER BY u.events DESC, p.slug`,
    args(s),
  );
  return rows.map((r) => ({ product: r.product as string, product_id: r.product_id as string, events: num(r.events), sessions: num(r.sessions) }));
}

/** (source_app, source_version) rows: the product slug and version, as SPEC.md names them. */
export async function versionsOf(q: Queryable, s: Scope) {
  const rows = await q.query(
    `SELECT p.slug AS source_app, u.product_version AS source_version, u.events, u.sessions
       FROM (SELECT product_id, product_version, sum(events) AS events, sum(sessions) AS sessions
               FROM rm_usage_days WHERE ${where(s)} GROUP BY 1, 2 HAVING sum(events) > 0) u
       JOIN products p ON p.id = u.product_id
      ORDER BY u.events DESC, 1, 2`,
    args(s),
  );
  return rows.map((r) => ({
    source_app: r.source_app as string,
    source_version: r.source_version as string,
    events: num(r.events),
    sessions: num(r.sessions),
  }));
}

/**
 * The other side of the pair: licenses of an account, accounts of a license, with events. Their
 * first and last seen are the pair's records (events, sessions, exceptions), as an account's own
 * are: compaction merges a day's rows, so "of events only" would change when it ran.
 */
export async function counterpartsOf(q: Queryable, s: Scope) {
  const other = s.kind === 'account_id' ? 'license_id' : 'account_id';
  const rows = await q.query(
    `SELECT e.k, e.events, coalesce(a.actors, 0) AS actors, e.first_seen, e.last_seen
       FROM (SELECT ${other} AS k, sum(events) AS events, min(first_seen) AS first_seen, max(last_seen) AS last_seen
               FROM rm_usage_days WHERE ${where(s)} AND ${other} <> '' GROUP BY 1 HAVING sum(events) > 0) e
       LEFT JOIN (SELECT ${other} AS k, count(DISTINCT actor_id) AS actors FROM rm_actor_days
                   WHERE ${where(s)} AND ${s.kind} <> '' AND ${other} <> '' AND events > 0 GROUP BY 1) a ON a.k = e.k
      ORDER BY e.events DESC, e.k`,
    args(s),
  );
  return rows.map((r) => ({
    id: r.k as string,
    events: num(r.events),
    active_actors: num(r.actors),
    first_seen: iso(r.first_seen),
    last_seen: iso(r.last_seen),
  }));
}

/** An account's pairs by events (most first), then category and name; after `after` ([events, category, name]) when given. rm_feature_days keeps no license. */
export async function featuresOf(q: Queryable, s: Scope & { kind: 'account_id' }, after: readonly [number, string, string] | undefined, limit: number) {
  const rows = await q.query(
    `SELECT category, name, sum(events) AS events, min(first_seen) AS first_seen, max(last_seen) AS last_seen
       FROM rm_feature_days WHERE ${where(s)} GROUP BY category, name
     HAVING $4::bigint IS NULL OR sum(events) < $4 OR (sum(events) = $4 AND (category, name) > ($5::text, $6::text))
      ORDER BY 3 DESC, 1, 2 LIMIT $7`,
    [...args(s), after?.[0] ?? null, after?.[1] ?? null, after?.[2] ?? null, limit],
  );
  return rows.map((r) => ({
    category: r.category as string,
    name: r.name as string,
    events: num(r.events),
    first_seen: iso(r.first_seen),
    last_seen: iso(r.last_seen),
  }));
}

/**
 * A page of the actors with events in the window, by actor id, with their events and first and last
 * event. The page's ids come from rm_actor_months (a row per actor and UTC month, its days with
 * events as bits: an account's few rows per actor), then only those actors' days are read from
 * rm_actor_days: reading every day of the biggest account to keep 50 actors took 100–145 ms at
 * 10M events (docs/accounts.md).
 */
export async function actorsOf(q: Queryable, s: Scope, after: string | undefined, limit: number) {
  const rows = await q.query(
    `WITH page AS (
       SELECT DISTINCT actor_id FROM rm_actor_months
        WHERE tenant_id = $1 AND ${s.kind} = $2 AND ${windowMonthsSql('$6', '$7', '$8', '$9')} AND ($4::text IS NULL OR actor_id > $4)
        ORDER BY actor_id LIMIT $5)
     SELECT d.actor_id, sum(d.events) AS events, min(d.first_seen) AS first_seen, max(d.last_seen) AS last_seen
       FROM rm_actor_days d JOIN page p ON p.actor_id = d.actor_id
      WHERE d.tenant_id = $1 AND d.${s.kind} = $2 AND ${inWindowSql('d.day', '$3')} AND d.events > 0
      GROUP BY d.actor_id ORDER BY d.actor_id`,
    [...args(s), after ?? null, limit, ...windowMonths(s.windowStart)],
  );
  return rows.map((r) => ({ actor_id: r.actor_id as string, events: num(r.events), first_seen: iso(r.first_seen), last_seen: iso(r.last_seen) }));
}

export async function dailyActivity(q: Queryable, s: Scope) {
  const rows = await q.query(
    `SELECT day::text AS day, sum(events) AS events, sum(sessions) AS sessions, sum(exceptions) AS exceptions
       FROM rm_usage_days WHERE ${where(s)} GROUP BY day HAVING sum(events) <> 0 OR sum(sessions) <> 0 OR sum(exceptions) <> 0 ORDER BY day DESC`,
    args(s),
  );
  return rows.map((r) => ({ day: r.day as string, events: num(r.events), sessions: num(r.sessions), exceptions: num(r.exceptions) }));
}
