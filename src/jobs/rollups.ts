import { LOCKS, type LockedSession, type Queryable } from '../storage/db.js';
import { compactDay, compactionDue } from '../storage/read-model/compact.js';
import { dirtyTenants, foldNewRows, foldRange, markDirty, refreshTenant, saveFoldRange, staleTenants, touchRefreshed } from '../storage/rollups.js';
import type { Job } from './runner.js';

export const WINDOW_DAYS = 30;
const COMPACT_PER_RUN = 64;

/** The window: the 30 UTC days ending on the day of `now` (today included). */
export function windowStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (WINDOW_DAYS - 1))).toISOString().slice(0, 10);
}

/** One transaction of the job, without the request path's 15 s statement timeout (a large backlog needs longer) or JIT (it costs more than it saves here). */
function step<T>(s: LockedSession, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return s.tx(async (q) => {
    await q.exec('SET LOCAL statement_timeout = 0; SET LOCAL jit = off');
    return fn(q);
  });
}

/**
 * Every ROLLUP_INTERVAL_SECONDS, in one process at a time: fold the rows written since the last
 * run into the read model (cost follows new data), then rebuild the account and license snapshots
 * of the tenants that had new data or whose window moved to a new day (cost follows the window's
 * derived rows, never raw events), then compact the days whose deltas have piled up.
 *
 * The fold goes in slices of transaction ids, each slice its own transaction: its derived rows, the
 * horizon it moved, and the tenants it touched (marked for refresh) commit together, so every row
 * is folded exactly once and no refresh is lost to a crash. Each tenant's refresh is a transaction
 * of its own. Slices aim at `sliceMs` each, halving or doubling their width from the last one's
 * time: on the embedded store, whose one connection requests share with the job, that bounds how
 * long a request waits behind it; on PostgreSQL it bounds the length of the job's transactions. A
 * slice that overran narrows the next in proportion (at least by half).
 */
export function rollupJob(intervalSeconds: number, sliceMs = 10_000, initialWidth = 256): Job {
  let width = initialWidth; // transaction ids per slice, carried from run to run
  return {
    name: 'rollups',
    lockKey: LOCKS.rollups,
    intervalMs: Math.max(1, intervalSeconds) * 1000,
    async run(s, now) {
      const start = windowStart(now);
      let until: number | undefined; // the first slice's xmax: rows that come during the run wait for the next one
      for (let more = true; more;) {
        let took = 0; // the slice's own work, not its wait for the connection
        more = await step(s, async (q) => {
          const began = performance.now();
          const range = await foldRange(q, width, until);
          until ??= range.xmax;
          const touched = await foldNewRows(q, range);
          await saveFoldRange(q, range);
          await markDirty(q, [...touched]);
          took = performance.now() - began;
          return range.capped;
        });
        if (took > sliceMs) width = Math.max(1, Math.floor(width * Math.min(0.5, sliceMs / took)));
        else if (more && took < sliceMs / 4) width = Math.min(width * 2, 1 << 30);
      }
      const due = new Set([...(await dirtyTenants(s)), ...(await staleTenants(s, start))]);
      for (const tenantId of due) await step(s, (q) => refreshTenant(q, tenantId, start, now));
      await step(s, (q) => touchRefreshed(q, now));
      // Compaction last, a (tenant, day) per transaction, bounded per run: it is never urgent.
      for (const d of await compactionDue(s, now.toISOString().slice(0, 10), COMPACT_PER_RUN)) await step(s, (q) => compactDay(q, d.tenant_id, d.day));
    },
  };
}
