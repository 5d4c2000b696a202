import type { Queryable } from './db.js';

// The rollup job's SQL. fold*: new rows (ingest_xid in [from, to)) into daily facts, by the
// record's own UTC day; refreshTenant: the tenant's account and license snapshots over the window,
// from facts only (never from raw events).

const DAY = `((%s AT TIME ZONE 'UTC')::date)`;
const day = (col: string) => DAY.replace('%s', col);

/** All transactions with an id below this have ended: their rows can be folded. */
export async function foldHorizon(q: Queryable): Promise<{ from: number; to: number }> {
  const [row] = await q.query<{ from: string; to: string }>(
    `SELECT (SELECT horizon FROM rollup_state WHERE id = 1)::text AS from, pg_snapshot_xmin(pg_current_snapshot())::text AS to`,
  );
  return { from: Number(row!.from), to: Number(row!.to) };
}

export async function setHorizon(q: Queryable, to: number): Promise<void> {
  await q.query('UPDATE rollup_state SET horizon = $1 WHERE id = 1', [to]);
}

/** Folds new events, sessions and exceptions; returns the tenants that had any. */
export async function foldNewRows(q: Queryable, from: number, to: number, oldest: Date): Promise<Set<string>> {
  const params = [from, to, oldest];
  const tenants = new Set<string>();
  const add = (rows: { tenant_id: string }[]) => rows.forEach((r) => tenants.add(r.tenant_id));
  add(
    await q.query(
      `INSERT INTO ru_event_facts AS f (tenant_id, account_id, day, license_id, product_id, product_version, category, name, events, first_seen, last_seen)
       SELECT tenant_id, coalesce(account_id, ''), ${day('occurred_at')}, coalesce(license_id, ''), product_id, product_version, category, name,
              count(*), min(occurred_at), max(occurred_at)
         FROM events WHERE ingest_xid >= $1 AND ingest_xid < $2 AND occurred_at >= $3
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
       ON CONFLICT (tenant_id, account_id, day, license_id, product_id, product_version, category, name) DO UPDATE
         SET events = f.events + excluded.events, first_seen = least(f.first_seen, excluded.first_seen), last_seen = greatest(f.last_seen, excluded.last_seen)
       RETURNING tenant_id`,
      params,
    ),
  );
  await q.query(
    `INSERT INTO ru_actor_facts AS f (tenant_id, account_id, day, license_id, actor_id, events, first_seen, last_seen)
     SELECT tenant_id, coalesce(account_id, ''), ${day('occurred_at')}, coalesce(license_id, ''), actor_id, count(*), min(occurred_at), max(occurred_at)
       FROM events WHERE ingest_xid >= $1 AND ingest_xid < $2 AND occurred_at >= $3
      GROUP BY 1, 2, 3, 4, 5
     ON CONFLICT (tenant_id, account_id, day, license_id, actor_id) DO UPDATE
       SET events = f.events + excluded.events, first_seen = least(f.first_seen, excluded.first_seen), last_seen = greatest(f.last_seen, excluded.last_seen)`,
    params,
  );
  add(
    await q.query(
      `INSERT INTO ru_session_facts AS f (tenant_id, account_id, day, license_id, product_id, product_version, sessions)
       SELECT tenant_id, coalesce(account_id, ''), ${day('started_at')}, coalesce(license_id, ''), product_id, product_version, count(*)
         FROM sessions WHERE ingest_xid >= $1 AND ingest_xid < $2 AND started_at >= $3
        GROUP BY 1, 2, 3, 4, 5, 6
       ON CONFLICT (tenant_id, account_id, day, license_id, product_id, product_version) DO UPDATE SET sessions = f.sessions + excluded.sessions
       RETURNING tenant_id`,
      params,
    ),
  );
  add(
    await q.query(
      `INSERT INTO ru_exception_facts AS f (tenant_id, account_id, day, license_id, product_id, product_version, fingerprint, exceptions, first_seen, last_seen)
       SELECT tenant_id, coalesce(account_id, ''), ${day('occurred_at')}, coalesce(license_id, ''), product_id, product_version, fingerprint,
              count(*), min(occurred_at), max(occurred_at)
         FROM exceptions WHERE ingest_xid >= $1 AND ingest_xid < $2 AND occurred_at >= $3
        GROUP BY 1, 2, 3, 4, 5, 6, 7
       ON CONFLICT (tenant_id, account_id, day, license_id, product_id, product_version, fingerprint) DO UPDATE
         SET exceptions = f.exceptions + excluded.exceptions, first_seen = least(f.first_seen, excluded.first_seen), last_seen = greatest(f.last_seen, excluded.last_seen)
       RETURNING tenant_id`,
      params,
    ),
  );
  return tenants;
}

/** Tenants whose snapshot is due: new facts, or a window that has moved to a new day. */
export async function staleTenants(q: Queryable, windowStart: string): Promise<string[]> {
  const rows = await q.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_rollups WHERE window_start < $1::date', [windowStart]);
  return rows.map((r) => r.tenant_id);
}

const SUMS = (table: string, key: string, value: string) =>
  `SELECT ${key} AS k, sum(${value}) AS n FROM ${table} WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' GROUP BY ${key}`;

/** Rebuilds the tenant's account and license snapshots over the window from the facts. */
export async function refreshTenant(q: Queryable, tenantId: string, windowStart: string, now: Date): Promise<void> {
  const params = [tenantId, windowStart];
  for (const [key, other, table] of [
    ['account_id', 'license_id', 'ru_accounts'],
    ['license_id', 'account_id', 'ru_licenses'],
  ] as const) {
    await q.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
    const otherCol = table === 'ru_accounts' ? 'licenses' : 'accounts';
    await q.query(
      `INSERT INTO ${table} (tenant_id, ${key}, events, sessions, exceptions, active_actors, ${otherCol}, products, first_seen, last_seen)
       SELECT $1, ids.k, coalesce(e.events, 0), coalesce(s.n, 0), coalesce(x.n, 0), coalesce(a.actors, 0), coalesce(e.others, 0), coalesce(e.products, 0),
              least(e.first_seen, x.first_seen), greatest(e.last_seen, x.last_seen)
         FROM (SELECT ${key} AS k FROM ru_event_facts WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> ''
               UNION SELECT ${key} FROM ru_session_facts WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> ''
               UNION SELECT ${key} FROM ru_exception_facts WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '') ids
         LEFT JOIN (SELECT ${key} AS k, sum(events) AS events, count(DISTINCT nullif(${other}, '')) AS others, count(DISTINCT product_id) AS products,
                           min(first_seen) AS first_seen, max(last_seen) AS last_seen
                      FROM ru_event_facts WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' GROUP BY ${key}) e ON e.k = ids.k
         LEFT JOIN (${SUMS('ru_session_facts', key, 'sessions')}) s ON s.k = ids.k
         LEFT JOIN (SELECT ${key} AS k, sum(exceptions) AS n, min(first_seen) AS first_seen, max(last_seen) AS last_seen
                      FROM ru_exception_facts WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' GROUP BY ${key}) x ON x.k = ids.k
         LEFT JOIN (SELECT ${key} AS k, count(DISTINCT actor_id) AS actors FROM ru_actor_facts
                     WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' GROUP BY ${key}) a ON a.k = ids.k`,
      params,
    );
  }
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
  for (const table of ['ru_event_facts', 'ru_actor_facts', 'ru_session_facts', 'ru_exception_facts']) {
    await q.query(`DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE day < $1::date LIMIT 50000))`, [before]);
  }
}
