import type { Queryable } from './db.js';

// The rollup job's SQL. fold*: new rows (ingest_xid in [from, to)) into daily facts, by the
// record's own UTC day; refreshTenant: the tenant's account and license snapshots over the window,
// from facts only (never from raw events).

const DAY = `((%s AT TIME ZONE 'UTC')::date)`;
const day = (col: string) => DAY.replace('%s', col);

/**
 * What to fold: rows written by transactions that ended since the last run. `to` is the snapshot's
 * xmax; transactions at or above `from` and below `to` are folded unless still in progress, and
 * those in progress (plus any still running from earlier runs) are kept as `pending` for a later
 * run. A transaction that ended is visible in this snapshot if it committed, so each row is folded
 * exactly once, whatever the order of commits.
 */
export interface FoldRange {
  from: number;
  to: number;
  /** xids in [from, to) to leave for later: still in progress. */
  skip: number[];
  /** earlier pending xids that have ended: fold their rows now. */
  resolved: number[];
  /** what stays pending after this run. */
  pending: number[];
}

/**
 * The next slice to fold: at most `maxXids` transaction ids from the horizon on, and never past
 * `until` or the snapshot's xmax. `capped` says whether more remains below those; `xmax` is the
 * snapshot's (a job pins the first slice's, so that it ends even while rows keep coming).
 */
export async function foldRange(q: Queryable, maxXids = Number.MAX_SAFE_INTEGER, until = Number.MAX_SAFE_INTEGER): Promise<FoldRange & { capped: boolean; xmax: number }> {
  const [row] = await q.query<{ from: string; to: string; xip: string[] | null; pending: string[] | null }>(
    `SELECT s.horizon::text AS from, s.pending::text[] AS pending,
            pg_snapshot_xmax(pg_current_snapshot())::text AS to,
            ARRAY(SELECT x::text FROM pg_snapshot_xip(pg_current_snapshot()) AS x) AS xip
       FROM rollup_state s WHERE s.id = 1`,
  );
  const from = Number(row!.from);
  const xmax = Number(row!.to);
  const end = Math.max(from, Math.min(xmax, until));
  const to = Math.min(end, from + maxXids);
  const running = new Set((row!.xip ?? []).map(Number));
  const pending = (row!.pending ?? []).map(Number);
  const skip = [...running].filter((x) => x >= from && x < to);
  return {
    from,
    to,
    skip,
    resolved: pending.filter((x) => !running.has(x)),
    pending: [...new Set([...pending.filter((x) => running.has(x)), ...skip])],
    capped: to < end,
    xmax,
  };
}

/** Marks tenants whose facts a slice changed, for a refresh (rollup_dirty). */
export async function markDirty(q: Queryable, tenantIds: string[]): Promise<void> {
  if (tenantIds.length === 0) return;
  await q.query('INSERT INTO rollup_dirty (tenant_id) SELECT unnest($1::uuid[]) ON CONFLICT DO NOTHING', [tenantIds]);
}

export async function dirtyTenants(q: Queryable): Promise<string[]> {
  return (await q.query<{ tenant_id: string }>('SELECT tenant_id FROM rollup_dirty')).map((r) => r.tenant_id);
}

export async function saveFoldRange(q: Queryable, r: FoldRange): Promise<void> {
  await q.query('UPDATE rollup_state SET horizon = $1, pending = $2::bigint[] WHERE id = 1', [r.to, r.pending]);
}

// Every arm carries a range of ingest_xid, so that each can be a scan of the BRIN index (a bare
// `= ANY(…)` arm would force a scan of the whole table); $6 and $7 bound the resolved xids.
const NEW_ROWS = `((ingest_xid >= $1 AND ingest_xid < $2 AND ingest_xid <> ALL($4::bigint[])) OR (ingest_xid >= $6 AND ingest_xid <= $7 AND ingest_xid = ANY($5::bigint[])))`;

/**
 * Folds new events, sessions and exceptions; returns the tenants that had any. Runs inside the
 * caller's transaction.
 *
 * New rows are a thin slice of a large table, found through the BRIN indexes on ingest_xid. A BRIN
 * index narrows a scan only over the page ranges it has summarised, which vacuum does; without
 * autovacuum (the embedded store, or a server with it off) nothing would be, and without
 * statistics the planner would scan whole tables, so each fold grew with the table. So the new
 * ranges are summarised here, at every fold (rows keep arriving while a job runs), and the planner
 * is kept off whole-table scans for the fold's statements.
 */
export async function foldNewRows(q: Queryable, r: FoldRange, oldest: Date): Promise<Set<string>> {
  await q.query(`SELECT brin_summarize_new_values(i) FROM unnest('{events_ingest_xid,sessions_ingest_xid,exceptions_ingest_xid}'::regclass[]) AS i`);
  await q.exec('SET LOCAL enable_seqscan = off');
  const tenants = await foldFacts(q, r, oldest);
  await q.exec('SET LOCAL enable_seqscan = on');
  return tenants;
}

async function foldFacts(q: Queryable, r: FoldRange, oldest: Date): Promise<Set<string>> {
  const params = [r.from, r.to, oldest, r.skip, r.resolved, r.resolved.length ? Math.min(...r.resolved) : 1, r.resolved.length ? Math.max(...r.resolved) : 0];
  const tenants = new Set<string>();
  const add = (rows: { tenant_id: string }[]) => rows.forEach((r) => tenants.add(r.tenant_id));
  // Only the distinct tenants come back to Node, not every upserted fact row.
  const distinctTenants = (insert: string) => `WITH f AS (${insert} RETURNING tenant_id) SELECT DISTINCT tenant_id FROM f`;
  add(
    await q.query(
      distinctTenants(`INSERT INTO ru_event_facts AS f (tenant_id, account_id, day, license_id, product_id, product_version, category, name, events, first_seen, last_seen)
       SELECT tenant_id, coalesce(account_id, ''), ${day('occurred_at')}, coalesce(license_id, ''), product_id, product_version, category, name,
              count(*), min(occurred_at), max(occurred_at)
         FROM events WHERE ${NEW_ROWS} AND occurred_at >= $3
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
       ON CONFLICT (tenant_id, account_id, day, license_id, product_id, product_version, category, name) DO UPDATE
         SET events = f.events + excluded.events, first_seen = least(f.first_seen, excluded.first_seen), last_seen = greatest(f.last_seen, excluded.last_seen)`),
      params,
    ),
  );
  await q.query(
    `INSERT INTO ru_actor_facts AS f (tenant_id, account_id, day, license_id, actor_id, events, first_seen, last_seen)
     SELECT tenant_id, coalesce(account_id, ''), ${day('occurred_at')}, coalesce(license_id, ''), actor_id, count(*), min(occurred_at), max(occurred_at)
       FROM events WHERE ${NEW_ROWS} AND occurred_at >= $3
      GROUP BY 1, 2, 3, 4, 5
     ON CONFLICT (tenant_id, account_id, day, license_id, actor_id) DO UPDATE
       SET events = f.events + excluded.events, first_seen = least(f.first_seen, excluded.first_seen), last_seen = greatest(f.last_seen, excluded.last_seen)`,
    params,
  );
  add(
    await q.query(
      distinctTenants(`INSERT INTO ru_session_facts AS f (tenant_id, account_id, day, license_id, product_id, product_version, sessions)
       SELECT tenant_id, coalesce(account_id, ''), ${day('started_at')}, coalesce(license_id, ''), product_id, product_version, count(*)
         FROM sessions WHERE ${NEW_ROWS} AND started_at >= $3
        GROUP BY 1, 2, 3, 4, 5, 6
       ON CONFLICT (tenant_id, account_id, day, license_id, product_id, product_version) DO UPDATE SET sessions = f.sessions + excluded.sessions`),
      params,
    ),
  );
  add(
    await q.query(
      distinctTenants(`INSERT INTO ru_exception_facts AS f (tenant_id, account_id, day, license_id, product_id, product_version, fingerprint, exceptions, first_seen, last_seen)
       SELECT tenant_id, coalesce(account_id, ''), ${day('occurred_at')}, coalesce(license_id, ''), product_id, product_version, fingerprint,
              count(*), min(occurred_at), max(occurred_at)
         FROM exceptions WHERE ${NEW_ROWS} AND occurred_at >= $3
        GROUP BY 1, 2, 3, 4, 5, 6, 7
       ON CONFLICT (tenant_id, account_id, day, license_id, product_id, product_version, fingerprint) DO UPDATE
         SET exceptions = f.exceptions + excluded.exceptions, first_seen = least(f.first_seen, excluded.first_seen), last_seen = greatest(f.last_seen, excluded.last_seen)`),
      params,
    ),
  );
  await foldKeys(q, params);
  return tenants;
}

const KEYS = `CROSS JOIN LATERAL (VALUES ('a'::"char", r.account_id), ('l'::"char", r.license_id)) AS k(kind, key)`;

/** A fold of one table's new rows into ru_key_days: its count column, and whether it keeps first/last seen. */
function keyDaysFold(table: 'events' | 'sessions' | 'exceptions', time: string, measure: string, seen: boolean): string {
  const seenCols = seen ? ', first_seen, last_seen' : '';
  const seenVals = seen ? `, min(r.${time}), max(r.${time})` : '';
  const seenSet = seen ? ', first_seen = least(d.first_seen, excluded.first_seen), last_seen = greatest(d.last_seen, excluded.last_seen)' : '';
  return `INSERT INTO ru_key_days AS d (tenant_id, kind, key, day, ${measure}${seenCols})
     SELECT r.tenant_id, k.kind, k.key, ${day(`r.${time}`)}, count(*)${seenVals}
       FROM ${table} r ${KEYS} WHERE ${NEW_ROWS.replaceAll('ingest_xid', 'r.ingest_xid')} AND r.${time} >= $3 AND k.key IS NOT NULL
      GROUP BY 1, 2, 3, 4
     ON CONFLICT (tenant_id, kind, key, day) DO UPDATE SET ${measure} = d.${measure} + excluded.${measure}${seenSet}`;
}

/** The narrow per-key tables: daily totals, and members with their last active day. */
async function foldKeys(q: Queryable, params: unknown[]): Promise<void> {
  await q.query(keyDaysFold('events', 'occurred_at', 'events', true), params);
  await q.query(keyDaysFold('sessions', 'started_at', 'sessions', false), params);
  await q.query(keyDaysFold('exceptions', 'occurred_at', 'exceptions', true), params);
  // Grouped before it is expanded into members; a member row is written only when its last day moves.
  await q.query(
    `INSERT INTO ru_key_members AS m (tenant_id, kind, key, member_kind, member, last_day)
     SELECT g.tenant_id, k.kind, k.key, mm.kind, mm.member, max(g.day)
       FROM (SELECT r.tenant_id, r.account_id, r.license_id, r.actor_id, r.product_id, max(${day('r.occurred_at')}) AS day
               FROM events r WHERE ${NEW_ROWS.replaceAll('ingest_xid', 'r.ingest_xid')} AND r.occurred_at >= $3
              GROUP BY 1, 2, 3, 4, 5) g
       CROSS JOIN LATERAL (VALUES ('a'::"char", g.account_id), ('l'::"char", g.license_id)) AS k(kind, key)
       CROSS JOIN LATERAL (VALUES ('u'::"char", g.actor_id), ('p'::"char", g.product_id::text), ('l'::"char", g.license_id), ('a'::"char", g.account_id)) AS mm(kind, member)
      WHERE k.key IS NOT NULL AND mm.member IS NOT NULL AND mm.kind <> k.kind
      GROUP BY 1, 2, 3, 4, 5
     ON CONFLICT (tenant_id, kind, key, member_kind, member) DO UPDATE SET last_day = excluded.last_day WHERE m.last_day < excluded.last_day`,
    params,
  );
}

/** Tenants whose snapshot is due: new facts, or a window that has moved to a new day. */
export async function staleTenants(q: Queryable, windowStart: string): Promise<string[]> {
  const rows = await q.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_rollups WHERE window_start < $1::date', [windowStart]);
  return rows.map((r) => r.tenant_id);
}

/** Rebuilds the tenant's account and license snapshots over the window from the per-key tables. */
export async function refreshTenant(q: Queryable, tenantId: string, windowStart: string, now: Date): Promise<void> {
  for (const [kind, table, key, other] of [
    ['a', 'ru_accounts', 'account_id', 'licenses'],
    ['l', 'ru_licenses', 'license_id', 'accounts'],
  ] as const) {
    await q.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
    await q.query(
      `INSERT INTO ${table} (tenant_id, ${key}, events, sessions, exceptions, active_actors, ${other}, products, first_seen, last_seen)
       SELECT $1, d.key, d.events, d.sessions, d.exceptions, coalesce(m.actors, 0), coalesce(m.others, 0), coalesce(m.products, 0), d.first_seen, d.last_seen
         FROM (SELECT key, sum(events) AS events, sum(sessions) AS sessions, sum(exceptions) AS exceptions, min(first_seen) AS first_seen, max(last_seen) AS last_seen
                 FROM ru_key_days WHERE tenant_id = $1 AND kind = $3 AND day >= $2::date GROUP BY key) d
         LEFT JOIN (SELECT key, count(*) FILTER (WHERE member_kind = 'u') AS actors, count(*) FILTER (WHERE member_kind = $4) AS others,
                           count(*) FILTER (WHERE member_kind = 'p') AS products
                      FROM ru_key_members WHERE tenant_id = $1 AND kind = $3 AND last_day >= $2::date GROUP BY key) m ON m.key = d.key`,
      [tenantId, windowStart, kind, kind === 'a' ? 'l' : 'a'],
    );
  }
  await q.query('DELETE FROM rollup_dirty WHERE tenant_id = $1', [tenantId]);
  await q.query(
    `INSERT INTO tenant_rollups (tenant_id, refreshed_at, window_start) VALUES ($1, $2, $3::date)
     ON CONFLICT (tenant_id) DO UPDATE SET refreshed_at = excluded.refreshed_at, window_start = excluded.window_start`,
    [tenantId, now, windowStart],
  );
}

/** Every other tenant with rollups: its window end moves to this refresh. */
export async function touchRefreshed(q: Queryable, now: Date): Promise<void> {
  await q.query('UPDATE tenant_rollups SET refreshed_at = $1', [now]);
}

/** Facts older than the window are no longer read. Bounded per run. */
export async function dropOldFacts(q: Queryable, before: string): Promise<void> {
  for (const table of ['ru_event_facts', 'ru_actor_facts', 'ru_session_facts', 'ru_exception_facts', 'ru_key_days']) {
    await q.query(`DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE day < $1::date LIMIT 50000))`, [before]);
  }
  await q.query('DELETE FROM ru_key_members WHERE ctid = ANY(ARRAY(SELECT ctid FROM ru_key_members WHERE last_day < $1::date LIMIT 50000))', [before]);
}
