import { AppError } from '../../errors.js';
import type { Db, Queryable } from '../../storage/db.js';

// The time budget of the behaviour queries that read raw events (funnels, paths, drill-down).
// On PostgreSQL a statement runs under SET LOCAL statement_timeout and a cancelled one becomes a
// 422 query_too_large; on the embedded store (no timeout to set) the scanned range and the rows
// read are bounded instead. Never a 503.

export const BUDGET_MS = 10_000;
/** The widest range the embedded store scans for one behaviour query. */
export const EMBEDDED_MAX_DAYS = 92;
/** Rows one query may bring back for evaluation, on either store. */
export const MAX_ROWS = 3_000_000;

export function tooLarge(what: string): AppError {
  return new AppError(422, 'query_too_large', `query too large for its time budget: ${what}`, { errors: [{ field: 'range', message: what }] });
}

export function checkRange(db: Db, fromMs: number, toMs: number): void {
  if (db.kind === 'pglite' && toMs - fromMs > EMBEDDED_MAX_DAYS * 86_400_000) {
    throw tooLarge(`narrow the range to at most ${EMBEDDED_MAX_DAYS} days (including the conversion window) on the embedded store`);
  }
}

/** Runs fn in a read transaction under the statement timeout; a cancelled statement is a 422. */
export async function withBudget<T>(db: Db, fn: (q: Queryable) => Promise<T>, budgetMs = BUDGET_MS): Promise<T> {
  try {
    return await db.tx(async (q) => {
      // work_mem: a behaviour query sorts or groups one row per relevant event; in memory, not on disk.
      if (db.kind === 'postgres') await q.exec(`SET LOCAL statement_timeout = ${Math.floor(budgetMs)}; SET LOCAL work_mem = '64MB'`);
      return fn(q);
    });
  } catch (err) {
    // The driver reports a cancelled statement as the store being unavailable (a 503 with the
    // PostgreSQL error as its cause); here it is our own budget running out.
    const cause = (err as { cause?: { code?: string } }).cause;
    if ((err as { code?: string }).code === '57014' || cause?.code === '57014') throw tooLarge('narrow the range, add a product filter, or use fewer steps');
    throw err;
  }
}
