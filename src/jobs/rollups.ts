import { LOCKS, type Queryable } from '../storage/db.js';
import { dropOldFacts, foldNewRows, foldRange, refreshTenant, saveFoldRange, staleTenants, touchRefreshed } from '../storage/rollups.js';
import type { Job } from './runner.js';

export const WINDOW_DAYS = 30;

/** The window: the 30 UTC days ending on the day of `now` (today included). */
export function windowStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (WINDOW_DAYS - 1))).toISOString().slice(0, 10);
}

async function inTransaction(q: Queryable, fn: () => Promise<void>): Promise<void> {
  await q.exec('BEGIN');
  // The request path's 15 s statement timeout would cancel the fold of a large backlog forever;
  // JIT compilation costs more than it saves on these statements.
  await q.exec('SET LOCAL statement_timeout = 0; SET LOCAL jit = off');
  try {
    await fn();
    await q.exec('COMMIT');
  } catch (err) {
    await q.exec('ROLLBACK').catch(() => {});
    throw err;
  }
}

/**
 * Every ROLLUP_INTERVAL_SECONDS, in one process at a time: fold the rows written since the last
 * run into daily facts (cost follows new data), then rebuild the snapshots of the tenants that had
 * new data or whose window moved to a new day (cost follows the window's facts, never raw events).
 * One transaction, so the fold, its horizon and the snapshots move together.
 */
export function rollupJob(intervalSeconds: number): Job {
  return {
    name: 'rollups',
    lockKey: LOCKS.rollups,
    intervalMs: Math.max(1, intervalSeconds) * 1000,
    async run(q, now) {
      const start = windowStart(now);
      await inTransaction(q, async () => {
        const range = await foldRange(q);
        // New rows are a thin slice of a large table, found through the BRIN indexes on ingest_xid.
        // A BRIN index only narrows a scan over page ranges it has summarised, which vacuum does;
        // without autovacuum (the embedded store, or a server with it off) nothing would be, and
        // without statistics the planner would scan whole tables: each fold grew with the table.
        await q.query(`SELECT brin_summarize_new_values(i) FROM unnest('{events_ingest_xid,sessions_ingest_xid,exceptions_ingest_xid}'::regclass[]) AS i`);
        await q.exec('SET LOCAL enable_seqscan = off');
        const touched = await foldNewRows(q, range, new Date(`${start}T00:00:00Z`));
        await q.exec('SET LOCAL enable_seqscan = on');
        await saveFoldRange(q, range);
        for (const tenantId of new Set([...touched, ...(await staleTenants(q, start))])) await refreshTenant(q, tenantId, start, now);
        await touchRefreshed(q, now);
        await dropOldFacts(q, start);
      });
    },
  };
}
