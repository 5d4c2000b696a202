import type { Queryable } from './db.js';
import { foldReadModel, type Folded } from './read-model/fold.js';
import { DERIVED_TABLES } from './read-model/tables.js';

// The rollup job's SQL. The fold range (which transaction ids a slice folds, exactly once);
// foldNewRows: the slice's rows into the read model; refreshTenant: the tenant's account and
// license snapshots over the window, from the read model only (never from raw events).

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
export async function foldRange(
  q: Queryable,
  maxXids = Number.MAX_SAFE_INTEGER,
  until = Number.MAX_SAFE_INTEGER,
): Promise<FoldRange & { capped: boolean; xmax: number }> {
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

/**
 * Where a slice ends so that it folds at most `budget` events: the events in the range `r` counted
 * per transaction id (through the BRIN index on ingest_xid, as the fold reads them: about a tenth
 * of the fold's own cost per event), and the end (exclusive) of the longest run of its transaction
 * ids that holds no more than `budget`, or undefined when the whole range does. A transaction's
 * events are never split: a slice holds at least the first transaction id that has events, however
 * many (a batch holds up to 1000). Counting before every slice is what bounds it: transaction ids
 * are not events (migrations and the job's own transactions write none, a batch up to 1000), so no
 * width in ids is safe to fold uncounted. Keeps the planner off whole-table scans for the rest of
 * the caller's transaction (a fold's, which wants the same).
 */
export async function sliceEnd(q: Queryable, r: FoldRange, budget: number): Promise<{ events: number; end: number | undefined }> {
  await q.exec('SET LOCAL enable_seqscan = off');
  const [row] = await q.query<{ events: number; fits: string | null; first: string | null }>(
    `WITH x AS (SELECT ingest_xid AS xid, count(*) AS n FROM events
                 WHERE (ingest_xid >= $1 AND ingest_xid < $2 AND ingest_xid <> ALL($3::bigint[]))
                    OR (ingest_xid >= $5 AND ingest_xid <= $6 AND ingest_xid = ANY($4::bigint[]))
                 GROUP BY 1),
          c AS (SELECT xid, sum(n) OVER (ORDER BY xid) AS upto FROM x)
     SELECT (SELECT coalesce(sum(n), 0) FROM x)::int AS events, (SELECT max(xid) FROM c WHERE upto <= $7)::text AS fits, (SELECT min(xid) FROM x)::text AS first`,
    [r.from, r.to, r.skip, r.resolved, r.resolved.length ? Math.min(...r.resolved) : 1, r.resolved.length ? Math.max(...r.resolved) : 0, budget],
  );
  const events = row?.events ?? 0;
  if (events <= budget) return { events, end: undefined };
  const last = Number(row!.fits ?? row!.first);
  return { events, end: Math.max(r.from + 1, last + 1) };
}

/** The BRIN indexes a fold reads new rows through, with their tables. */
const XID_INDEXES = [
  ['events_ingest_xid', 'events'],
  ['sessions_ingest_xid', 'sessions'],
  ['exceptions_ingest_xid', 'exceptions'],
  ['actor_links_ingest_xid', 'actor_links'],
] as const;
/** Heap pages per BRIN range (PostgreSQL's default; the migrations keep it). */
const PAGES_PER_RANGE = 128;
/** Per index, the first heap block whose range may not be summarised yet. */
export type SummaryCursor = Map<string, number>;

/**
 * Summarises at most `ranges` page ranges (128 pages, 1 MB each) of each BRIN index on ingest_xid,
 * from `cursor` on; returns how many it summarised, and whether each index has at most as many
 * left (a fold reads those few whole, which costs about what summarising them does; waiting for
 * none could wait for good while rows keep coming as fast as a step summarises).
 *
 * A BRIN index narrows a scan only over the page ranges it has summarised, which vacuum does;
 * without autovacuum (the embedded store, or a server with it off) nothing is, and a fold reads
 * every range not summarised: each fold would grow with the table. brin_summarize_new_values
 * summarises all of them in one call, and at saturation a minute of new events is about 200
 * ranges: the first fold of each run held the embedded store for seconds (12 s after a 1.2M-event
 * backlog built with the job off). So a step summarises a bounded number, and folds only once few
 * are left. The cursor starts at 0 in each process (a summarised range is skipped at the cost of a look
 * at the index) and stops at the start of the table's last range, which is partial: summarised, a
 * range takes new rows' values as they are inserted; the ranges after it are summarised next time.
 */
export async function summariseXidRanges(q: Queryable, cursor: SummaryCursor, ranges: number): Promise<{ summarised: number; done: boolean }> {
  // One statement for the four indexes: on the embedded store each statement of a step is a round
  // trip to a thread that is busy with requests at saturation.
  const rows = await q.query<{ pages: string; summarised: number }>(
    `SELECT pg_relation_size(x.tbl::regclass) / current_setting('block_size')::int AS pages,
            (SELECT coalesce(sum(brin_summarize_range(x.idx::regclass, b)), 0)::int
               FROM generate_series(x.start, least(x.start + $3::bigint * $4, pg_relation_size(x.tbl::regclass) / current_setting('block_size')::int) - 1, $4) AS b) AS summarised
       FROM unnest($1::text[], $2::text[], $5::bigint[]) WITH ORDINALITY AS x(idx, tbl, start, i) ORDER BY x.i`,
    [XID_INDEXES.map(([index]) => index), XID_INDEXES.map(([, table]) => table), ranges, PAGES_PER_RANGE, XID_INDEXES.map(([index]) => cursor.get(index) ?? 0)],
  );
  let done = true;
  let summarised = 0;
  XID_INDEXES.forEach(([index], i) => {
    const from = cursor.get(index) ?? 0;
    const pages = Number(rows[i]!.pages);
    const to = Math.min(from + ranges * PAGES_PER_RANGE, pages);
    summarised += rows[i]!.summarised;
    if (pages - to > ranges * PAGES_PER_RANGE) done = false;
    cursor.set(index, to < pages ? to : Math.max(from, Math.floor((pages - 1) / PAGES_PER_RANGE) * PAGES_PER_RANGE));
  });
  return { summarised, done };
}

/** Marks tenants whose derived rows a slice changed, for a refresh (rollup_dirty). */
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

/**
 * Folds the slice's new events, sessions, exceptions and identify links into the read model
 * (read-model/fold.ts); returns the tenants that had any and its number of events. Runs inside the
 * caller's transaction, whose rest keeps its planner settings (a statement less: on the embedded
 * store each is a round trip to a thread busy with requests). The planner is kept off whole-table
 * scans: new rows are a thin slice of a large table, found through the BRIN indexes on ingest_xid
 * (summariseXidRanges keeps them useful).
 */
export async function foldNewRows(q: Queryable, r: FoldRange): Promise<Folded> {
  // The slice is grouped by hashing, in memory: the planner cannot know how few distinct
  // combinations a slice has (1M events of a real product are a few thousand), and a sort of the
  // whole slice, spilled to disk at the default 4 MB, cost four times the rest of the fold. And the
  // slice's CTEs are joined by hashing too: a slice's transaction ids lie past the statistics'
  // histogram, so the planner expects one row from it and would join its CTEs in nested loops, which
  // on 100k events of 50k actors compare billions of pairs (the fold that "never finished").
  await q.exec("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; SET LOCAL enable_nestloop = off; SET LOCAL work_mem = '64MB'");
  return foldReadModel(q, r);
}

/** Tenants whose snapshot is due: new derived rows, or a window that has moved to a new day. */
export async function staleTenants(q: Queryable, windowStart: string): Promise<string[]> {
  const rows = await q.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_rollups WHERE window_start < $1::date', [windowStart]);
  return rows.map((r) => r.tenant_id);
}

/**
 * Rebuilds the tenant's account and license snapshots over the window from the read model: sums
 * from rm_usage_days, exact distinct actors from rm_actor_days (active: had events).
 */
export async function refreshTenant(q: Queryable, tenantId: string, windowStart: string, now: Date, detailMinRows = DETAIL_MIN_ROWS): Promise<void> {
  // Distinct pairs by hashing, in memory (a sort of the window's actor days spilled to disk).
  await q.exec("SET LOCAL enable_sort = off; SET LOCAL work_mem = '64MB'");
  for (const [table, key, other] of [
    ['ru_accounts', 'account_id', 'license_id'],
    ['ru_licenses', 'license_id', 'account_id'],
  ] as const) {
    const others = other === 'license_id' ? 'licenses' : 'accounts';
    await q.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
    await q.query(
      `INSERT INTO ${table} (tenant_id, ${key}, events, sessions, exceptions, active_actors, ${others}, products, first_seen, last_seen)
       SELECT $1, u.k, u.events, u.sessions, u.exceptions, coalesce(a.actors, 0), u.others, u.products, u.first_seen, u.last_seen
         FROM (SELECT ${key} AS k, sum(events) AS events, sum(sessions) AS sessions, sum(exceptions) AS exceptions,
                      count(DISTINCT ${other}) FILTER (WHERE events > 0 AND ${other} <> '') AS others,
                      count(DISTINCT product_id) FILTER (WHERE events > 0) AS products, min(first_seen) AS first_seen, max(last_seen) AS last_seen
                 FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' GROUP BY 1) u
         LEFT JOIN (SELECT k, count(*) AS actors FROM (SELECT DISTINCT ${key} AS k, actor_id FROM rm_actor_days
                     WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' AND events > 0) x GROUP BY 1) a ON a.k = u.k
        WHERE u.events <> 0 OR u.sessions <> 0 OR u.exceptions <> 0`,
      [tenantId, windowStart],
    );
    await refreshDetail(q, table, key, other, tenantId, windowStart, detailMinRows);
  }
  await q.query('DELETE FROM rollup_dirty WHERE tenant_id = $1', [tenantId]);
  await q.query(
    `INSERT INTO tenant_rollups (tenant_id, refreshed_at, window_start) VALUES ($1, $2, $3::date)
     ON CONFLICT (tenant_id) DO UPDATE SET refreshed_at = excluded.refreshed_at, window_start = excluded.window_start`,
    [tenantId, now, windowStart],
  );
}

type Kind = 'account_id' | 'license_id';

/**
 * Below this many derived usage rows in the window, an account's or license's lists are grouped
 * live at request time (about 10 ms at 1,000 rows on PostgreSQL); from it on, the refresh builds
 * them into its snapshot row. Building every one's cost the refresh more than the fold itself:
 * 28 s for 2,000 accounts and 5,000 licenses at 1M events, against 3 s for the 38 accounts at or
 * above 1,000 rows that hold a fifth of the rows (docs/accounts.md).
 */
export const DETAIL_MIN_ROWS = 1000;

/**
 * The detail of each snapshot row with at least `minRows` usage rows in the window (migration
 * 090): the lists one account's or license's view shows, in the order it shows them
 * (storage/accounts.ts reads them; its live queries say what each list is). The window's usage
 * rows of those keys are grouped once (u), each list is grouped from u by key, and the distinct
 * actors per (account, license) pair come from the actor days: one pass each, no per-key subquery.
 */
async function refreshDetail(
  q: Queryable,
  table: 'ru_accounts' | 'ru_licenses',
  key: Kind,
  other: Kind,
  tenantId: string,
  windowStart: string,
  minRows: number,
) {
  const license = key === 'license_id';
  await q.query(
    `WITH big AS MATERIALIZED (
       SELECT ${key} AS k FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date AND ${key} <> '' GROUP BY 1 HAVING count(*) >= $4),
     u AS MATERIALIZED (
       SELECT ${key} AS k, ${other} AS o, product_id, product_version AS v, day, sum(events) AS events, sum(sessions) AS sessions,
              sum(exceptions) AS exceptions, min(first_seen) AS fs, max(last_seen) AS ls
         FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date AND ${key} IN (SELECT k FROM big) GROUP BY 1, 2, 3, 4, 5),
     pairs AS (SELECT k, o, count(*) AS actors
                 FROM (SELECT DISTINCT ${key} AS k, ${other} AS o, actor_id FROM rm_actor_days
                        WHERE tenant_id = $1 AND day >= $2::date AND ${key} IN (SELECT k FROM big) AND ${other} <> '' AND events > 0) x GROUP BY 1, 2),
     prod AS (SELECT x.k, jsonb_agg(jsonb_build_object('product', p.slug, 'product_id', x.product_id, 'events', x.events, 'sessions', x.sessions)
                                    ORDER BY x.events DESC, p.slug) AS j
                FROM (SELECT k, product_id, sum(events) AS events, sum(sessions) AS sessions FROM u GROUP BY 1, 2 HAVING sum(events) > 0) x
                JOIN products p ON p.id = x.product_id GROUP BY x.k),
     ver AS (SELECT x.k, jsonb_agg(jsonb_build_object('source_app', p.slug, 'source_version', x.v, 'events', x.events, 'sessions', x.sessions)
                                   ORDER BY x.events DESC, p.slug, x.v) AS j
               FROM (SELECT k, product_id, v, sum(events) AS events, sum(sessions) AS sessions FROM u GROUP BY 1, 2, 3 HAVING sum(events) > 0) x
               JOIN products p ON p.id = x.product_id GROUP BY x.k),
     cp AS (SELECT e.k, jsonb_agg(jsonb_build_object('id', e.o, 'events', e.events, 'active_actors', coalesce(a.actors, 0), 'first_seen', e.fs, 'last_seen', e.ls)
                                  ORDER BY e.events DESC, e.o) AS j
              FROM (SELECT k, o, sum(events) AS events, min(fs) AS fs, max(ls) AS ls FROM u WHERE o <> '' GROUP BY 1, 2 HAVING sum(events) > 0) e
              LEFT JOIN pairs a ON a.k = e.k AND a.o = e.o GROUP BY e.k),
     dy AS (SELECT k, jsonb_agg(jsonb_build_object('day', day::text, 'events', events, 'sessions', sessions, 'exceptions', exceptions) ORDER BY day DESC) AS j
              FROM (SELECT k, day, sum(events) AS events, sum(sessions) AS sessions, sum(exceptions) AS exceptions FROM u WHERE $3 GROUP BY 1, 2
                     HAVING sum(events) <> 0 OR sum(sessions) <> 0 OR sum(exceptions) <> 0) x GROUP BY k),
     ks AS (SELECT DISTINCT k FROM u)
     UPDATE ${table} r
        SET detail = jsonb_build_object('products', coalesce(prod.j, '[]'), 'versions', coalesce(ver.j, '[]'), 'counterparts', coalesce(cp.j, '[]'),
                                        'days', CASE WHEN $3 THEN coalesce(dy.j, '[]') END)
       FROM ks LEFT JOIN prod ON prod.k = ks.k LEFT JOIN ver ON ver.k = ks.k LEFT JOIN cp ON cp.k = ks.k LEFT JOIN dy ON dy.k = ks.k
      WHERE r.tenant_id = $1 AND r.${key} = ks.k`,
    [tenantId, windowStart, license, minRows],
  );
}

/** Every other tenant with rollups: its window end moves to this refresh. */
export async function touchRefreshed(q: Queryable, now: Date): Promise<void> {
  await q.query('UPDATE tenant_rollups SET refreshed_at = $1', [now]);
}

/**
 * The tables the rollup job rewrites (compaction deletes and reinserts a day; first occurrences,
 * sessions and snapshots are updated in place), and the events table the fold and the reports read.
 * Neither store vacuums them by itself: PGlite has no autovacuum, and a PostgreSQL server may run
 * with it off. Without VACUUM their dead rows are never reused (each compaction leaves a day's
 * old rows behind); without ANALYZE the planner guesses their sizes.
 */
export const MAINTAINED_TABLES = [...DERIVED_TABLES, 'rm_compaction_due', 'ru_accounts', 'ru_licenses'] as const;

/** VACUUM (ANALYZE) of one table; outside any transaction (VACUUM cannot run in one). */
export async function vacuumTable(q: Queryable, table: (typeof MAINTAINED_TABLES)[number] | 'events'): Promise<void> {
  await q.query(table === 'events' ? 'ANALYZE events' : `VACUUM (ANALYZE) ${table}`);
}
