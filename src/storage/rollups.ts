import { refreshCoverage } from './coverage.js';
import type { Queryable, ScriptStatement } from './db.js';
import { foldStatements } from './read-model/fold.js';
import { DERIVED_TABLES, inWindowSql } from './read-model/tables.js';

// The rollup job's SQL, its transactions as scripts (script.mjs): foldStep, a slice of the rows
// written since the last one into the read model (which transaction ids it folds, exactly once);
// refreshTenant: the tenant's account and license snapshots and its coverage over the window, from
// the read model only (never from raw events).

/** The BRIN indexes a fold reads new rows through, with their tables. */
const XID_INDEXES = [
  ['events_ingest_xid', 'events'],
  ['sessions_ingest_xid', 'sessions'],
  ['exceptions_ingest_xid', 'exceptions'],
  ['actor_links_ingest_xid', 'actor_links'],
] as const;
/** Heap pages per BRIN range (PostgreSQL's default; the migrations keep it). */
const PAGES_PER_RANGE = 128;
/** How many ranges a fold step may walk past (already summarised) per range it may summarise. */
const WALK_RANGES_PER_RANGE = 64;

/** Per index, the first heap block whose range may not be summarised yet. */
export type SummaryCursor = Map<string, number>;

/** Where a fold step starts: the job's state, carried from step to step. */
export interface FoldStepInput {
  /** How far each BRIN index is summarised (this process's view). */
  cursor: SummaryCursor;
  /** How many page ranges of each index the step may summarise. */
  ranges: number;
  /** How many transaction ids the slice looks at, at most. */
  width: number;
  /** No slice past this transaction id (the first slice's snapshot xmax: a run ends while rows keep coming). */
  until: number | undefined;
  /** How many events the slice may fold. */
  budget: number;
  /**
   * At most how many ranges a step may summarise and still fold (undefined: any): past it the step
   * leaves its fold to the next one, so that a step costs about one of the two, not their sum.
   */
  foldAfter?: number | undefined;
}

/** What a fold step did. */
export interface FoldStepOutput {
  /** BRIN page ranges it summarised. */
  summarised: number;
  /** Whether it folded: false when it only summarised (more ranges were left than a step summarises). */
  folded: boolean;
  /** It summarised up to the tables' ends but more than `foldAfter` ranges, so did not fold. */
  heldBack: boolean;
  /** Its slice: width in transaction ids, events, whether the budget cut it, whether more remains below `until`. */
  xids: number;
  events: number;
  cut: boolean;
  capped: boolean;
  /** The snapshot's xmax when it took its slice (the run's `until`, from its first slice). */
  xmax: number | undefined;
}

// Every arm carries a range of the xid, so that each can use the BRIN index (read-model/fold.ts's inSlice).
const SLICE_XIDS = `(ingest_xid >= $1 AND ingest_xid < $2 AND ingest_xid <> ALL($3::bigint[]))
                 OR (ingest_xid >= $5 AND ingest_xid <= $6 AND ingest_xid = ANY($4::bigint[]))`;

/**
 * One step of the fold, as one script (script.mjs: one transaction, and on the embedded store one
 * message to its worker, with no round trip to the main thread between statements). Its statements:
 *
 * 1. `summary`: at most `ranges` BRIN page ranges of each ingest_xid index summarised, from the
 *    cursor on (walking past ranges summarised before, up to WALK_RANGES_PER_RANGE times as many), and whether each index has at most as many left (`done`). A BRIN index narrows a
 *    scan only over the page ranges it has summarised, which vacuum does; without autovacuum (the
 *    embedded store, or a server with it off) nothing is, and a fold reads every range not
 *    summarised. brin_summarize_new_values summarises all of them at once, and at saturation a
 *    minute of new events is about 200 ranges: it held the embedded store for seconds (12 s after a
 *    1.2M-event backlog built with the job off). So a step summarises a bounded number and folds
 *    only once few are left (a fold reads those few whole, which costs about what summarising them
 *    does; waiting for none could wait for good while rows keep coming as fast as a step
 *    summarises). Everything after runs only when `done`: a step that summarised commits that alone.
 * 2. `snap`: the slice's range from the horizon: transaction ids that ended since the last slice,
 *    `width` of them at most, never past `until` or the snapshot's xmax. Those still in progress
 *    (the snapshot's xip) are skipped, and pending (kept in rollup_state) until a later step sees
 *    them ended (`resolved`): a transaction that ended is visible to every later statement if it
 *    committed, so each row is folded exactly once, whatever the order of commits.
 * 3. `slice`: where the slice ends so that it folds at most `budget` events: the range's events
 *    counted per transaction id (through the BRIN index, as the fold reads them: about a tenth of
 *    the fold's own cost per event), and the end of the longest run of ids that holds no more than
 *    the budget. A transaction's events are never split: a slice holds at least the first id that
 *    has events, however many (a batch holds up to 1000). Transaction ids are not events
 *    (migrations and the job's own transactions write none, a batch up to 1000), so no width in
 *    ids is safe to fold uncounted. The pending list to keep: those still in progress, of the
 *    earlier ones and of this slice.
 * 4. The fold itself (read-model/fold.ts), whose statements mark the tenants they touched for a
 *    refresh, and the horizon moved: with the derived rows, in the same transaction.
 *
 * The planner is kept off whole-table scans for the whole step: new rows are a thin slice of a
 * large table, found through the BRIN indexes.
 */
export function foldStep(input: FoldStepInput): ScriptStatement[] {
  const ref = (name: string) => ({ $ref: name });
  const folds = 'summary.done';
  return [
    { sql: "SELECT set_config('enable_seqscan', 'off', true)" },
    {
      name: 'summary',
      // Range by range from the cursor (a recursive CTE runs one row at a time), until `ranges` of them were summarised
      // here (brin_summarize_range answers 1 for a range it summarised, 0 for one that was already), the table's end, or
      // a walk of WALK_RANGES_PER_RANGE times as many: after a restart the cursor starts at 0 and walks back over ranges
      // summarised before, which cost little; bounding the walk alone made a step of 1,017 ranges on the embedded store
      // that took 6.2 s once it reached the ones not summarised (bench:ingest --alternate, session 12).
      sql: `WITH RECURSIVE x AS (SELECT i, idx, start, pg_relation_size(tbl::regclass) / current_setting('block_size')::int AS pages
                         FROM unnest($1::text[], $2::text[], $5::bigint[]) WITH ORDINALITY AS x(idx, tbl, start, i)),
                 w AS (SELECT i, start AS b, 0::bigint AS n FROM x
                       UNION ALL
                       SELECT w.i, w.b + $4, w.n + brin_summarize_range(x.idx::regclass, w.b)
                         FROM w JOIN x ON x.i = w.i
                        WHERE w.b < x.pages AND w.n < $3::bigint AND w.b < x.start + $6::bigint * $4),
                 s AS (SELECT x.i, x.pages, least(max(w.b), x.pages) AS upto, max(w.n) AS summarised FROM x JOIN w ON w.i = x.i GROUP BY x.i, x.pages)
            SELECT array_agg(pages ORDER BY i) AS pages, array_agg(upto ORDER BY i) AS upto, sum(summarised)::int AS summarised,
                   bool_and(pages - upto <= $3::bigint * $4) AS reached,
                   bool_and(pages - upto <= $3::bigint * $4) AND ($7::bigint IS NULL OR sum(summarised) <= $7::bigint) AS done FROM s`,
      params: [
        XID_INDEXES.map(([index]) => index),
        XID_INDEXES.map(([, table]) => table),
        input.ranges,
        PAGES_PER_RANGE,
        XID_INDEXES.map(([index]) => input.cursor.get(index) ?? 0),
        Math.min(Number.MAX_SAFE_INTEGER, input.ranges * WALK_RANGES_PER_RANGE + WALK_RANGES_PER_RANGE),
        input.foldAfter ?? null,
      ],
    },
    {
      name: 'snap',
      when: folds,
      sql: `WITH st AS (SELECT s.horizon AS "from", coalesce(s.pending, '{}') AS pending, pg_snapshot_xmax(c)::text::bigint AS xmax,
                               ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(c) AS x) AS xip
                          FROM rollup_state s, pg_current_snapshot() AS c WHERE s.id = 1),
                 r AS (SELECT *, greatest("from", least(xmax, coalesce($2::bigint, xmax))) AS "end" FROM st),
                 w AS (SELECT *, least("end", "from" + $1::bigint) AS "to", ARRAY(SELECT p FROM unnest(pending) AS p WHERE p <> ALL(xip)) AS resolved FROM r)
            SELECT "from", "to", "end", xmax, xip, pending, resolved, ARRAY(SELECT x FROM unnest(xip) AS x WHERE x >= "from" AND x < "to") AS skip,
                   coalesce((SELECT min(p) FROM unnest(resolved) AS p), 1) AS rmin, coalesce((SELECT max(p) FROM unnest(resolved) AS p), 0) AS rmax
              FROM w`,
      params: [input.width, input.until ?? null],
    },
    {
      name: 'slice',
      when: folds,
      sql: `WITH x AS (SELECT ingest_xid AS xid, count(*) AS n FROM events WHERE ${SLICE_XIDS} GROUP BY 1),
                 c AS (SELECT xid, sum(n) OVER (ORDER BY xid) AS upto FROM x),
                 e AS (SELECT CASE WHEN coalesce(sum(n), 0) <= $7 THEN $2::bigint
                                   ELSE least($2::bigint, greatest($1::bigint + 1, coalesce((SELECT max(xid) FROM c WHERE upto <= $7), min(xid)) + 1)) END AS "to"
                         FROM x),
                 k AS (SELECT v FROM unnest($8::bigint[]) AS v, e WHERE v >= $1::bigint AND v < e."to")
            SELECT $1::bigint AS "from", e."to", e."to" < $2::bigint AS cut, e."to" < $9::bigint AS capped, ARRAY(SELECT v FROM k) AS skip,
                   $4::bigint[] AS resolved, $5::bigint AS rmin, $6::bigint AS rmax,
                   ARRAY(SELECT p FROM unnest($10::bigint[]) AS p WHERE p = ANY($8::bigint[]) UNION SELECT v FROM k) AS pending
              FROM e`,
      params: ['from', 'to', 'skip', 'resolved', 'rmin', 'rmax', input.budget, 'xip', 'end', 'pending'].map((c) =>
        typeof c === 'string' ? ref(`snap.${c}`) : c,
      ),
    },
    ...foldStatements(['from', 'to', 'skip', 'resolved', 'rmin', 'rmax'].map((c) => ref(`slice.${c}`))).map((st) => ({ ...st, when: folds })),
    { when: folds, sql: 'UPDATE rollup_state SET horizon = $1, pending = $2::bigint[] WHERE id = 1', params: [ref('slice.to'), ref('slice.pending')] },
  ];
}

/** Reads a fold step's answer (`rows` of its script) and moves `cursor` (the input's) past the ranges it summarised. */
export function foldStepDone(input: FoldStepInput, rows: Record<string, Record<string, unknown>[]>): FoldStepOutput {
  const summary = rows.summary![0]! as { pages: (number | string)[]; upto: (number | string)[]; summarised: number; reached: boolean; done: boolean };
  XID_INDEXES.forEach(([index], i) => {
    const from = input.cursor.get(index) ?? 0;
    const pages = Number(summary.pages[i]);
    const to = Math.min(Number(summary.upto[i]), pages);
    // Up to the start of the table's last range, which is partial: summarised, a range takes new
    // rows' values as they are inserted; the ranges after it are summarised next time.
    input.cursor.set(index, to < pages ? to : Math.max(from, Math.floor((pages - 1) / PAGES_PER_RANGE) * PAGES_PER_RANGE));
  });
  const slice = rows.slice?.[0] as { from: number; to: number; cut: boolean; capped: boolean } | undefined;
  const snap = rows.snap?.[0] as { xmax: number } | undefined;
  const heldBack = summary.reached && !summary.done;
  if (!summary.done || !slice || !snap)
    return { summarised: summary.summarised, folded: false, heldBack, xids: 0, events: 0, cut: false, capped: true, xmax: undefined };
  return {
    summarised: summary.summarised,
    folded: true,
    heldBack,
    xids: Number(slice.to) - Number(slice.from),
    events: Number((rows.events?.[0] as { events: number } | undefined)?.events ?? 0),
    cut: slice.cut,
    capped: slice.capped,
    xmax: Number(snap.xmax),
  };
}

export async function dirtyTenants(q: Queryable): Promise<string[]> {
  return (await q.query<{ tenant_id: string }>('SELECT tenant_id FROM rollup_dirty')).map((r) => r.tenant_id);
}

/** Tenants whose snapshot is due: new derived rows, or a window that has moved to a new day. */
export async function staleTenants(q: Queryable, windowStart: string): Promise<string[]> {
  const rows = await q.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_rollups WHERE window_start < $1::date', [windowStart]);
  return rows.map((r) => r.tenant_id);
}

/**
 * Rebuilds the tenant's account and license snapshots over the window from the read model: sums
 * from rm_usage_days, exact distinct actors from rm_actor_days (active: had events); then its
 * coverage (coverage.ts), with the refresh time.
 */
export function refreshTenant(tenantId: string, windowStart: string, now: Date, detailMinRows = DETAIL_MIN_ROWS): ScriptStatement[] {
  // Distinct pairs by hashing, in memory (a sort of the window's actor days spilled to disk).
  const script: ScriptStatement[] = [{ sql: "SELECT set_config('enable_sort', 'off', true), set_config('work_mem', '64MB', true)" }];
  for (const [table, key, other] of [
    ['ru_accounts', 'account_id', 'license_id'],
    ['ru_licenses', 'license_id', 'account_id'],
  ] as const) {
    const others = other === 'license_id' ? 'licenses' : 'accounts';
    script.push({ sql: `DELETE FROM ${table} WHERE tenant_id = $1`, params: [tenantId] });
    script.push({
      sql: `INSERT INTO ${table} (tenant_id, ${key}, events, sessions, exceptions, active_actors, ${others}, products, first_seen, last_seen)
       SELECT $1, u.k, u.events, u.sessions, u.exceptions, coalesce(a.actors, 0), u.others, u.products, u.first_seen, u.last_seen
         FROM (SELECT ${key} AS k, sum(events) AS events, sum(sessions) AS sessions, sum(exceptions) AS exceptions,
                      count(DISTINCT ${other}) FILTER (WHERE events > 0 AND ${other} <> '') AS others,
                      count(DISTINCT product_id) FILTER (WHERE events > 0) AS products, min(first_seen) AS first_seen, max(last_seen) AS last_seen
                 FROM rm_usage_days WHERE tenant_id = $1 AND ${inWindowSql('day', '$2')} AND ${key} <> '' GROUP BY 1) u
         LEFT JOIN (SELECT k, count(*) AS actors FROM (SELECT DISTINCT ${key} AS k, actor_id FROM rm_actor_days
                     WHERE tenant_id = $1 AND ${inWindowSql('day', '$2')} AND ${key} <> '' AND events > 0) x GROUP BY 1) a ON a.k = u.k
        WHERE u.events <> 0 OR u.sessions <> 0 OR u.exceptions <> 0`,
      params: [tenantId, windowStart],
    });
    script.push(refreshDetail(table, key, other, tenantId, windowStart, detailMinRows));
  }
  script.push({ sql: 'DELETE FROM rollup_dirty WHERE tenant_id = $1', params: [tenantId] });
  script.push(refreshCoverage(tenantId, now, windowStart));
  return script;
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
function refreshDetail(table: 'ru_accounts' | 'ru_licenses', key: Kind, other: Kind, tenantId: string, windowStart: string, minRows: number): ScriptStatement {
  const license = key === 'license_id';
  return {
    sql: `WITH big AS MATERIALIZED (
       SELECT ${key} AS k FROM rm_usage_days WHERE tenant_id = $1 AND ${inWindowSql('day', '$2')} AND ${key} <> '' GROUP BY 1 HAVING count(*) >= $4),
     u AS MATERIALIZED (
       SELECT ${key} AS k, ${other} AS o, product_id, product_version AS v, day, sum(events) AS events, sum(sessions) AS sessions,
              sum(exceptions) AS exceptions, min(first_seen) AS fs, max(last_seen) AS ls
         FROM rm_usage_days WHERE tenant_id = $1 AND ${inWindowSql('day', '$2')} AND ${key} IN (SELECT k FROM big) GROUP BY 1, 2, 3, 4, 5),
     pairs AS (SELECT k, o, count(*) AS actors
                 FROM (SELECT DISTINCT ${key} AS k, ${other} AS o, actor_id FROM rm_actor_days
                        WHERE tenant_id = $1 AND ${inWindowSql('day', '$2')} AND ${key} IN (SELECT k FROM big) AND ${other} <> '' AND events > 0) x GROUP BY 1, 2),
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
    params: [tenantId, windowStart, license, minRows],
  };
}

/** Every other tenant with rollups: its window end moves to this refresh. */
export function touchRefreshed(now: Date): ScriptStatement[] {
  return [{ sql: 'UPDATE tenant_rollups SET refreshed_at = $1', params: [now] }];
}

/**
 * The tables the rollup job rewrites (compaction deletes and reinserts a day; first occurrences,
 * sessions and snapshots are updated in place), and the events table the fold and the reports read.
 * Neither store vacuums them by itself: PGlite has no autovacuum, and a PostgreSQL server may run
 * with it off. Without VACUUM their dead rows are never reused (each compaction leaves a day's
 * old rows behind); without ANALYZE the planner guesses their sizes. Events are only inserted
 * (and deleted by erasure, purge and retention): on PostgreSQL their VACUUM reads only the pages
 * written since the last one and marks them all-visible, which lets the behaviour queries read
 * `events_by_name` alone (an index-only scan); the embedded store's upkeep only analyzes them
 * (rollupJob's vacuumEvents).
 */
const MAINTAINED_TABLES = [...DERIVED_TABLES, 'rm_compaction_due', 'rm_actor_ordinals', 'rm_session_days_stale', 'ru_accounts', 'ru_licenses'] as const;

/** rm_actor_months' rows per 8 kB page, about (36 MB for 197,685 rows when freshly written). */
const MONTH_ROWS_PER_PAGE = 40;

/** When rm_actor_months is rewritten: it holds more than `ratio` times the pages its rows need, and at least `minPages`. */
export interface MonthsBloat {
  ratio: number;
  minPages: number;
}

/** The upkeep's default: 4 times, and 10 MB. */
export const MONTHS_BLOAT: MonthsBloat = { ratio: 4, minPages: 1280 };

/**
 * Rewrites rm_actor_months (VACUUM FULL) when it holds many times the pages its rows need, after
 * the upkeep's ANALYZE gave the planner its row count. A backlog folded in many slices keeps every
 * slice's deltas until the run's merge (10 slices of 10M events: 2M rows, 414 MB, for 200,000
 * merged rows, 36 MB); VACUUM makes that space reusable but does not give it back, and the readers
 * of the table (retention, active actors, environment, accounts over time) scan it whole: a
 * 12-week retention read 0.61 s against 0.44 s on the rewritten table. The rewrite holds the
 * table (readers wait) for its length, 1.5 s at that size. Whether it ran.
 */
async function rewriteBloatedMonths(q: Queryable, bloat: MonthsBloat): Promise<boolean> {
  const [r] = await q.query<{ pages: number; rows: number }>(
    "SELECT relpages::float8 AS pages, reltuples::float8 AS rows FROM pg_class WHERE oid = 'rm_actor_months'::regclass",
  );
  const [pages, rows] = [Number(r?.pages ?? 0), Number(r?.rows ?? -1)];
  if (rows < 0 || pages < bloat.minPages || pages <= bloat.ratio * Math.ceil(rows / MONTH_ROWS_PER_PAGE)) return false;
  await q.query('VACUUM (FULL, ANALYZE) rm_actor_months');
  return true;
}

/**
 * The read model's upkeep, one statement at a time (so that the embedded store serves requests
 * between them) and outside any transaction (VACUUM cannot run in one): VACUUM (ANALYZE) of every maintained table, of `events` too or only its ANALYZE
 * (`vacuumEvents`: the embedded store only analyzes them), then the rewrite of a bloated
 * rm_actor_months. `timed` hears each statement's name and time (its wait for the connection
 * included).
 */
export async function upkeep(
  q: Queryable,
  { vacuumEvents, monthsBloat = MONTHS_BLOAT }: { vacuumEvents: boolean; monthsBloat?: MonthsBloat },
  timed: (name: string, ms: number) => void = () => {},
): Promise<void> {
  for (const table of [...MAINTAINED_TABLES, 'events' as const]) {
    const began = performance.now();
    await q.query(table === 'events' && !vacuumEvents ? 'ANALYZE events' : `VACUUM (ANALYZE) ${table}`);
    timed(`vacuum ${table}`, performance.now() - began);
  }
  const began = performance.now();
  if (await rewriteBloatedMonths(q, monthsBloat)) timed('vacuum full rm_actor_months', performance.now() - began);
}
