import { LOCKS, type LockedSession, type Queryable } from '../storage/db.js';
import { compactDay, compactionDue } from '../storage/read-model/compact.js';
import {
  dirtyTenants,
  foldNewRows,
  foldRange,
  markDirty,
  refreshTenant,
  saveFoldRange,
  sliceEvents,
  staleTenants,
  touchRefreshed,
  vacuumTable,
  MAINTAINED_TABLES,
} from '../storage/rollups.js';
import type { Job } from './runner.js';

export const WINDOW_DAYS = 30;
const COMPACT_PER_RUN = 64;
/** How often a run ends with VACUUM (ANALYZE) of the read model's tables (and ANALYZE of events). */
export const VACUUM_EVERY_MS = 10 * 60_000;

/** The window: the 30 UTC days ending on the day of `now` (today included). */
export function windowStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (WINDOW_DAYS - 1))).toISOString().slice(0, 10);
}

/** Told how long each of the job's transactions held the store. */
type Watch = (what: string, ms: number) => void;

/** One transaction of the job, without the request path's 15 s statement timeout (a large backlog needs longer) or JIT (it costs more than it saves here). */
async function step<T>(s: LockedSession, watch: Watch, what: string, fn: (q: Queryable) => Promise<T>): Promise<T> {
  let began = 0;
  try {
    return await s.tx(async (q) => {
      // From its first statement: not the wait for the connection, behind requests.
      began = performance.now();
      await q.exec('SET LOCAL statement_timeout = 0; SET LOCAL jit = off');
      return fn(q);
    });
  } finally {
    if (began > 0) watch(what, performance.now() - began);
  }
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
 * of its own. Slices aim at `sliceMs` each: on the embedded store, whose one connection requests
 * share with the job, that bounds how long a request waits behind it; on PostgreSQL it bounds the
 * length of the job's transactions. Each slice's width follows the last one's time in proportion,
 * at most doubling (a slice's cost is partly fixed), and an overrun at least halves it. Transaction
 * ids are not events (a migration, the job's own transactions write none; a batch writes up to
 * 1000), so a slice wider than any timed so far first counts its events and narrows to what its
 * time allows at the cost per event last seen.
 *
 * A run of many slices (a backlog) refreshes the snapshots it has made stale every interval, so
 * that the account views move while it catches up. With `compactEvery`, it also compacts every so
 * many slices, so that no compaction grows long: on the embedded store, where a request waits for
 * a compaction as for a slice (on PostgreSQL a day's compaction rewrites the whole day, too much
 * to repeat during a backlog).
 */
export interface RollupOptions {
  /** What a slice aims at (default 10 s: PostgreSQL; the embedded store uses 100 ms). */
  sliceMs?: number;
  /** The first slice's width in transaction ids (default 256). */
  initialWidth?: number;
  /** Compact every so many slices of a run (default 0: only at its end). */
  compactEvery?: number;
  /** How often a run ends with VACUUM (ANALYZE) (default VACUUM_EVERY_MS; 0: every run). */
  vacuumEveryMs?: number;
  /** From how many usage rows in the window an account's or license's lists are built into its snapshot (default DETAIL_MIN_ROWS). */
  detailMinRows?: number;
  /**
   * A transaction of the job that holds the store longer than this is logged (warn, with what it
   * did): on the embedded store requests wait behind each one. Default 0: none.
   */
  slowStepMs?: number;
}

export function rollupJob(intervalSeconds: number, options: RollupOptions = {}): Job {
  const { sliceMs = 10_000, initialWidth = 256, compactEvery = 0, vacuumEveryMs = VACUUM_EVERY_MS, detailMinRows, slowStepMs = 0 } = options;
  const intervalMs = Math.max(1, intervalSeconds) * 1000;
  let width = initialWidth; // transaction ids per slice (fractional, it follows time in proportion), carried from run to run
  let timedWidth = 0; // the widest slice whose events were counted or timed
  let usPerEvent = 20; // the fold's cost per event, learned from counted slices
  let vacuumedAt = performance.now(); // the first after vacuumEveryMs: a process that restarts often does not vacuum at each start
  return {
    name: 'rollups',
    lockKey: LOCKS.rollups,
    intervalMs,
    async run(s, now, log) {
      const watch: Watch = (what, ms) => {
        if (slowStepMs > 0 && ms > slowStepMs) log?.warn({ step: what, ms: Math.round(ms) }, 'rollups: a step held the store');
      };
      const start = windowStart(now);
      let until: number | undefined; // the first slice's xmax: rows that come during the run wait for the next one
      let refreshedAt = performance.now();
      let slices = 0;
      for (let more = true; more;) {
        let took = 0; // the slice's own work, not its wait for the connection
        let counted: number | undefined;
        more = await step(s, watch, 'fold', async (q) => {
          const began = performance.now();
          let range = await foldRange(q, Math.max(1, Math.floor(width)), until);
          until ??= range.xmax;
          if (range.to - range.from > timedWidth) {
            counted = await sliceEvents(q, range);
            const fits = Math.max(1, Math.floor((sliceMs * 1000) / usPerEvent));
            if (counted > fits && range.to - range.from > 1) {
              width = Math.max(1, Math.floor(((range.to - range.from) * fits) / counted));
              range = await foldRange(q, Math.max(1, Math.floor(width)), until);
              counted = undefined;
            }
          }
          const touched = await foldNewRows(q, range);
          await saveFoldRange(q, range);
          await markDirty(q, [...touched]);
          took = performance.now() - began;
          timedWidth = Math.max(timedWidth, range.to - range.from);
          return range.capped;
        });
        if (counted !== undefined && counted > 1000) usPerEvent = Math.max(1, (took * 1000) / counted);
        if (took > sliceMs) {
          width = Math.max(1, width * Math.max(0.25, Math.min(0.5, sliceMs / took)));
          timedWidth = Math.floor(width);
        } else if (more) width = Math.min(width * Math.min(2, sliceMs / Math.max(took, 1)), 1 << 30);
        if (more && compactEvery > 0 && ++slices % compactEvery === 0) await compact(s, now, watch);
        if (more && performance.now() - refreshedAt > intervalMs) {
          for (const tenantId of await dirtyTenants(s)) await step(s, watch, 'refresh', (q) => refreshTenant(q, tenantId, start, now, detailMinRows));
          refreshedAt = performance.now();
        }
      }
      const due = new Set([...(await dirtyTenants(s)), ...(await staleTenants(s, start))]);
      for (const tenantId of due) await step(s, watch, 'refresh', (q) => refreshTenant(q, tenantId, start, now, detailMinRows));
      await step(s, watch, 'touch', (q) => touchRefreshed(q, now));
      await compact(s, now, watch);
      // Last, every vacuumEveryMs: one table per statement, so that the embedded store serves
      // requests between them (docs/read-model.md, "Upkeep").
      if (performance.now() - vacuumedAt >= vacuumEveryMs) {
        for (const table of [...MAINTAINED_TABLES, 'events' as const]) {
          const began = performance.now();
          await vacuumTable(s, table);
          watch(`vacuum ${table}`, performance.now() - began);
        }
        vacuumedAt = performance.now();
      }
    },
  };
}

/** Compaction, a (tenant, day) per transaction, bounded per call: it is never urgent. */
async function compact(s: LockedSession, now: Date, watch: Watch): Promise<void> {
  for (const d of await compactionDue(s, now.toISOString().slice(0, 10), COMPACT_PER_RUN))
    await step(s, watch, `compact ${d.day}`, (q) => compactDay(q, d.tenant_id, d.day));
}
