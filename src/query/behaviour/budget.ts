import { queryTooLarge } from '../../errors.js';
import type { Db, Queryable } from '../../storage/db.js';
import { DAY_MS } from '../scope.js';

// The time budget of the behaviour queries that read raw events (funnels, paths, drill-down).
// On PostgreSQL a statement runs under the request pool's statement timeout, like every read
// query, and one past it is a 422 query_too_large (src/app.ts, the read side's error handler); on
// the embedded store (no timeout to set) the scanned range and the rows read are bounded instead.
// Never a 503.
/** The widest range the embedded store scans for one behaviour query. */
export const EMBEDDED_MAX_DAYS = 92;
/** Rows one query may bring back for evaluation, on either store. */
export const MAX_ROWS = 3_000_000;

export const tooLarge = queryTooLarge;

export function checkRange(db: Db, fromMs: number, toMs: number): void {
  if (db.kind === 'pglite' && toMs - fromMs > EMBEDDED_MAX_DAYS * DAY_MS) {
    throw tooLarge(`narrow the range to at most ${EMBEDDED_MAX_DAYS} days (including the conversion window) on the embedded store`);
  }
}

/**
 * Runs fn in a read transaction on PostgreSQL (under the pool's statement timeout). On the embedded
 * store a transaction would hold its one connection, ingestion included, for the whole query and
 * the JavaScript between its statements; there fn's statements go one by one, in the read lane
 * (src/storage/read-lane.ts), and a write can run between them.
 */
export async function withBudget<T>(db: Db, fn: (q: Queryable) => Promise<T>, opts: { hashGroups?: boolean } = {}): Promise<T> {
  if (db.kind === 'pglite') return fn(db);
  return db.tx(async (q) => {
    // work_mem: a behaviour query sorts or groups one row per relevant event; in memory, not on disk.
    // hashGroups: the query's groups need no order, and PostgreSQL would still sort every row by
    // group (it prices a hash of ~100k groups of lists above a sort of millions of rows).
    await q.exec(`SET LOCAL work_mem = '64MB'${opts.hashGroups ? '; SET LOCAL enable_sort = off' : ''}`);
    return fn(q);
  });
}
