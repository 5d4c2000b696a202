import { queryTooLarge } from '../../errors.js';
import type { Queryable } from '../../storage/db.js';
import { type Filters } from '../filters.js';
import { Params } from '../params.js';
import { exactTime } from '../../storage/rows.js';

// Raw events read in chunks, one short statement each, so that on the embedded store (one
// connection, a statement never interrupted) the writes queued behind a long report run between
// its statements instead of waiting out its whole scan (docs/embedded-store.md, "A long read").
// A chunk is the next `rows` events of the tenant in (occurred_at, event_id) order from the range's
// start, read through the events_by_time index (leading with tenant_id, occurred_at, event_id) with a keyset,
// before any other filter: every statement reads at most `rows` events, however selective the
// filters (a LIMIT after them could scan the whole range to fill one chunk). The caller merges the
// chunks' partial answers exactly (trends.ts: counts add up, distinct actors as a union).

/**
 * Rows per chunk when nothing says otherwise (the embedded store): a chunk of 5,000 took 50–294 ms at load 10 in a scratch run,
 * most under 100 ms (docs/benchmarks.md, "A long read on the embedded store").
 */
export const DEFAULT_CHUNK_ROWS = 5_000;

/** How a report reads raw events: in chunks of `chunkRows` events, or (0) in one statement. */
export interface ReadOptions {
  chunkRows?: number | undefined;
  /** What the merge of the chunks may hold, in cells (trends.ts, chunkedRows); past it a 422 query_too_large. */
  maxCells?: number | undefined;
  /**
   * How long a read in chunks may take in all (READ_CHUNK_BUDGET_MS); past it a 422 query_too_large, as a statement past
   * PostgreSQL's timeout is, not a request that outlives the server's socket timeout (75 s) unanswered.
   */
  budgetMs?: number | undefined;
}

/** What a read in chunks may hold while it merges them, in cells, when nothing says otherwise (READ_CHUNK_MAX_CELLS). */
export const DEFAULT_MAX_CELLS = 3_000_000;

/** How long a read in chunks may take when nothing says otherwise: twice PostgreSQL's statement timeout, for chunks cost more than one statement. */
export const DEFAULT_BUDGET_MS = 30_000;

/** ReadOptions with their defaults: one statement, DEFAULT_MAX_CELLS, DEFAULT_BUDGET_MS. */
export const readWith = (opts: ReadOptions): Required<ReadOptions> => ({
  chunkRows: opts.chunkRows ?? 0,
  maxCells: opts.maxCells ?? DEFAULT_MAX_CELLS,
  budgetMs: opts.budgetMs ?? DEFAULT_BUDGET_MS,
});

/** The chunk key columns every chunk's rows carry (see eachChunk). */
interface ChunkKey {
  chunk_at: string;
  chunk_id: string;
  chunk_rows: number;
}

/**
 * Runs one statement per chunk of the scope's raw events and hands each one's rows to `each`.
 * Past `read.budgetMs` in all (checked between chunks), a 422 query_too_large.
 * `build(sql)` gets the chunk's Params (the chunk's own bounds are in it) and returns the CTEs
 * (after `c`, the chunk's events with every column of `events`; each CTE followed by a comma) and
 * the SELECT over them; read the chunk as a table of events with `rawEvents(…, 'c')`. The rows of
 * a chunk whose SELECT has none come as one row of NULLs (with its key), so `each` must skip rows
 * without a column its SELECT never leaves NULL.
 */
export async function eachChunk<T>(
  q: Queryable,
  f: Filters,
  read: Required<ReadOptions>,
  build: (sql: Params) => { ctes: string; select: string },
  each: (rows: T[]) => void,
): Promise<void> {
  const s = f.scope;
  const rows = read.chunkRows;
  const began = performance.now();
  let after: [string, string] | undefined;
  for (;;) {
    if (after && performance.now() - began > read.budgetMs)
      throw queryTooLarge(`more events than fit the read's ${read.budgetMs} ms: narrow the range or add a filter`);
    const sql = new Params();
    // After the last chunk's key: written as a bound on occurred_at and an OR, not as the row comparison
    // (occurred_at, event_id) > (…), which the planner took as a filter, sorting every event after the key (1.2 s a chunk).
    let start = `occurred_at >= ${sql.add(s.from)}::timestamptz`;
    if (after) {
      const at = sql.add(after[0]);
      start += ` AND occurred_at >= ${at}::timestamptz AND (occurred_at > ${at}::timestamptz OR event_id > ${sql.add(after[1])}::uuid)`;
    }
    const chunk = `c AS MATERIALIZED (SELECT * FROM events WHERE tenant_id = ${sql.add(s.tenantId)} AND ${start} AND occurred_at < ${sql.add(s.to)}::timestamptz
       ORDER BY occurred_at, event_id LIMIT ${sql.add(rows)})`;
    const { ctes, select } = build(sql);
    const got = await q.query<T & ChunkKey>(
      `WITH ${chunk}, ${ctes}
         chunk_key AS (SELECT ${exactTime('occurred_at')} AS chunk_at, event_id::text AS chunk_id, (SELECT count(*) FROM c)::int AS chunk_rows
                         FROM c ORDER BY occurred_at DESC, event_id DESC LIMIT 1)
       SELECT x.*, chunk_key.* FROM chunk_key LEFT JOIN (${select}) x ON true`,
      sql.values,
    );
    if (got.length === 0) return;
    each(got);
    const key = got[0]!;
    if (Number(key.chunk_rows) < rows) return;
    after = [key.chunk_at, key.chunk_id];
  }
}
