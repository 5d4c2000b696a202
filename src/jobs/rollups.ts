import { LOCKS, type LockedSession, type ScriptStatement } from '../storage/db.js';
import { compactDay, compactionDue, mergeMonthsStep, settleDays } from '../storage/read-model/compact.js';
import { sessionSetsStep } from '../storage/read-model/session-sets.js';
import { WINDOW_DAYS } from '../storage/read-model/tables.js';
import {
  dirtyTenants,
  foldStep,
  foldStepDone,
  refreshTenant,
  type FoldStepInput,
  type SummaryCursor,
  staleTenants,
  touchRefreshed,
  upkeep,
  type MonthsBloat,
  MONTHS_BLOAT,
} from '../storage/rollups.js';
import type { Job } from './runner.js';

const COMPACT_PER_RUN = 64;
/** How often a run ends with VACUUM (ANALYZE) of the read model's tables (and ANALYZE of events). */
export const VACUUM_EVERY_MS = 10 * 60_000;
/** rm_actor_months' merge steps per compaction, at most (a merge is never urgent: deltas cost rows, not answers). */
const MERGE_STEPS_PER_RUN = 64;
/** Days of release health's sets built per run, at most, one per transaction (never urgent: readers read a stale day's rows). */
const SET_DAYS_PER_RUN = 64;

/** The window: the 30 UTC days ending on the day of `now` (today included). */
export function windowStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (WINDOW_DAYS - 1))).toISOString().slice(0, 10);
}

/** Told how long each of the job's transactions held the store (`ms`: from its BEGIN to its COMMIT's answer), with what it did (`detail`). */
type Watch = (what: string, ms: number, detail: object) => void;

/**
 * One transaction of the job, as one script (on the embedded store one message to its worker, run
 * there whole), without the request path's 15 s statement timeout (a large backlog needs longer)
 * or JIT (it costs more than it saves here). Resolves to the script's named statements' rows, and
 * how long it held the store (its own work, not its wait for the connection).
 */
async function step(
  s: LockedSession,
  watch: Watch,
  what: string,
  statements: ScriptStatement[],
  detail?: (rows: Record<string, Record<string, unknown>[]>) => object,
): Promise<{ rows: Record<string, Record<string, unknown>[]>; ms: number }> {
  const began = performance.now();
  const { rows, ms } = await s.script(
    [
      // The read model's writers take turns with erasures (docs/data-rights.md): a step that read an
      // actor's rows before an erasure committed must not write them back after it.
      { sql: "SELECT set_config('statement_timeout', '0', true), set_config('jit', 'off', true), pg_advisory_xact_lock($1)", params: [LOCKS.readModelWrites] },
      ...statements,
    ],
    {
      derived: true,
    },
  );
  // answered_ms: from sending it to its answer, with its waits for the connection and, on the embedded store, for this thread.
  watch(what, ms, { ...detail?.(rows), answered_ms: Math.round(performance.now() - began) });
  return { rows, ms };
}

/**
 * During a backlog, the snapshots are refreshed every interval, but no sooner after the last
 * refresh than this many times its length: refreshes then take at most a fifth of a long run.
 * A refresh reads the deltas the backlog has piled up before compaction: on bench:queries' 10M
 * events one took 40 to 100 s, about a slice, and refreshing after every slice spent 563 s of
 * the 1,914 s first fold (262 s of 1,625 s with this spacing).
 */
const REFRESH_SPACING = 4;

/**
 * The cost per event a slice is first sized by, before one has been timed: cautious, about what a
 * one-batch slice (1000 events, with a slice's fixed cost) took on the embedded store with both
 * cores busy (50 to 160 µs). A slice of the embedded store's 200 ms then starts at 2,000 events.
 */
const FIRST_US_PER_EVENT = 100;

/**
 * On PostgreSQL a slice may hold this many events, however long it takes: reads and writes run
 * on connections of their own there, so a long slice holds up no request, and a bigger slice
 * costs less per event (its events share derived rows; measured in docs/read-model.md, "How big
 * a slice is").
 */
export const SLICE_MIN_EVENTS_PG = 10_000_000;

/**
 * How many BRIN page ranges (1 MB of heap each) a step first summarises per ms of `sliceMs`: one
 * took 12 to 30 ms on the embedded store with both cores busy, so a 200 ms step starts at 8.
 */
const RANGES_PER_MS = 1 / 25;

/**
 * The cost per key a month-merge step is first sized by, before one has been timed: cautious, about
 * the slowest a step cost in the embedded store's worker under bench:ingest with both cores busy
 * (50 to 920 µs per key at load 2 to 13; a 400-key step of 3,171 rows took 253 ms). A step of the
 * embedded store's 200 ms then starts at 400 keys.
 */
const FIRST_US_PER_MERGED_KEY = 500;

/** The widest a slice looks, in transaction ids: where the width of a process that has run a while ends up. */
export const MAX_WIDTH = 1 << 30;

/** A slice's size: the transaction ids it looks at, and the events it may fold (`budget`). */
interface Size {
  width: number;
  budget: number;
}
/** What a slice did: its width in transaction ids, its events, whether the budget cut it short, its time. */
interface Slice {
  xids: number;
  events: number;
  cut: boolean;
  ms: number;
}

/**
 * The next slice's size from the last one's. The budget follows the last slice's time in
 * proportion, at most doubling, when the last slice was full (the budget cut it, or it held at
 * least half of it): a slice with few events says little of the cost per event (its fixed part,
 * first occurrences and actor days per distinct actor, dominates). The width looks twice as far
 * as a cut slice went; otherwise it doubles while slices fit their time (a run of empty ids is
 * crossed quickly) and stays as it is when one did not.
 */
function nextSize(size: Size, last: Slice, sliceMs: number, minEvents: number): Size {
  const full = last.cut || last.events >= size.budget / 2;
  const fits = Math.floor((last.events * sliceMs) / Math.max(1, last.ms));
  const budget = full ? Math.max(1, minEvents, Math.min(2 * size.budget, fits)) : size.budget;
  const widen = last.ms <= sliceMs || last.events < minEvents;
  const width = last.cut ? Math.max(1, 2 * last.xids) : widen ? Math.min(2 * size.width, MAX_WIDTH) : size.width;
  return { width, budget };
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
 * length of the job's transactions. A slice is bounded in events, counted per transaction id
 * before it (ids are not events: a migration or the job's own transaction writes none, a batch up
 * to 1000), by a budget that starts from a cautious cost per event and follows full slices' time
 * (nextSize). Each step first summarises a few BRIN ranges of the new rows' pages, and folds once
 * few are left (storage/rollups.ts, foldStep).
 *
 * A run of many slices (a backlog) refreshes the snapshots it has made stale every interval (or
 * REFRESH_SPACING times the last refresh's length, if longer), so that the account views move
 * while it catches up. With `compactEvery`, it also compacts every so
 * many slices, so that no compaction grows long: on the embedded store, where a request waits for
 * a compaction as for a slice (on PostgreSQL a day's compaction rewrites the whole day, too much
 * to repeat during a backlog).
 */
export interface RollupOptions {
  /** What a slice aims at (default 10 s: PostgreSQL; the embedded store uses 200 ms). */
  sliceMs?: number;
  /** The first slice's width in transaction ids (default 256). */
  initialWidth?: number;
  /**
   * A slice may fold this many events whatever its time (default 0: `sliceMs` alone sizes it;
   * PostgreSQL's job takes SLICE_MIN_EVENTS_PG). A slice's cost per event falls as it grows,
   * since its events share derived rows (docs/read-model.md, "How big a slice is").
   */
  minSliceEvents?: number;
  /** Compact every so many slices of a run (default 0: only at its end). */
  compactEvery?: number;
  /** How often a run ends with VACUUM (ANALYZE) (default VACUUM_EVERY_MS; 0: every run). */
  vacuumEveryMs?: number;
  /** When that upkeep also rewrites rm_actor_months (default: past 4 times the pages its rows need, and 10 MB). */
  monthsBloat?: MonthsBloat;
  /**
   * Whether that upkeep vacuums `events` (default true) or only analyzes it: the embedded store
   * runs one statement at a time, and a VACUUM of ten minutes of saturated ingest would hold every
   * request for seconds (docs/read-model.md, "Upkeep").
   */
  vacuumEvents?: boolean;
  /** At most this many keys per step of rm_actor_months' merge (default: as many as fit `sliceMs`, from the last full step's time). */
  mergeKeys?: number;
  /** From how many usage rows in the window an account's or license's lists are built into its snapshot (default DETAIL_MIN_ROWS). */
  detailMinRows?: number;
  /**
   * A transaction of the job that holds the store longer than this is logged (warn, with what it
   * did): on the embedded store requests wait behind each one. Default 0: none.
   */
  slowStepMs?: number;
}

export function rollupJob(intervalSeconds: number, options: RollupOptions = {}): Job {
  const {
    sliceMs = 10_000,
    initialWidth = 256,
    minSliceEvents = 0,
    compactEvery = 0,
    vacuumEveryMs = VACUUM_EVERY_MS,
    monthsBloat = MONTHS_BLOAT,
    vacuumEvents = true,
    mergeKeys = 1 << 20,
    detailMinRows,
    slowStepMs = 0,
  } = options;
  const intervalMs = Math.max(1, intervalSeconds) * 1000;
  // Carried from run to run: how many transaction ids a slice looks at, and how many events it may fold (first from a cautious cost).
  let size: Size = { width: initialWidth, budget: Math.max(1, minSliceEvents, Math.floor((sliceMs * 1000) / FIRST_US_PER_EVENT)) };
  const summarised: SummaryCursor = new Map();
  let ranges = Math.max(1, Math.round(sliceMs * RANGES_PER_MS)); // per index and step, following the time of steps that only summarised
  let vacuumedAt = performance.now(); // the first after vacuumEveryMs: a process that restarts often does not vacuum at each start
  // Carried from run to run, like the slice's size: what a month-merge step is sized by (first a cautious cost per key).
  const merge: Merge = { usPerKey: FIRST_US_PER_MERGED_KEY, max: mergeKeys, sliceMs };
  return {
    name: 'rollups',
    lockKey: LOCKS.rollups,
    intervalMs,
    async run(s, now, log) {
      const watch: Watch = (what, ms, detail) => {
        if (slowStepMs > 0 && ms > slowStepMs) log.warn({ step: what, ms: Math.round(ms), ...detail }, 'rollups: a step held the store');
      };
      const start = windowStart(now);
      let until: number | undefined; // the first slice's xmax: rows that come during the run wait for the next one
      let refreshedAt = performance.now();
      let refreshMs = 0; // how long this run's last refresh took
      let slices = 0;
      let heldBack = false; // the last step reached the tables' ends but summarised too much to fold as well: the next one folds
      for (let more = true; more;) {
        const input: FoldStepInput = {
          cursor: summarised,
          ranges,
          width: Math.max(1, Math.floor(size.width)),
          until,
          budget: size.budget,
          // A step that summarised more than a quarter of what it may leaves the fold to the next (once: no step waits twice).
          foldAfter: heldBack ? undefined : Math.max(1, Math.floor(ranges / 4)),
        };
        let done: ReturnType<typeof foldStepDone> | undefined;
        const { ms } = await step(s, watch, 'fold', foldStep(input), (rows) => {
          done = foldStepDone(input, rows);
          return { xids: done.xids, events: done.events, cut: done.cut, ranges: done.summarised, budget: size.budget };
        });
        more = done!.capped;
        heldBack = done!.heldBack;
        // The indexes first, a few page ranges per step (the step only summarised): a fold reads every range not summarised.
        // Sized by steps that summarised most of what they could: one that walked past ranges summarised before (after a
        // restart) took little time for little work, which says nothing of a range's cost. The slice, by steps that folded.
        if (!done!.folded) {
          if (done!.summarised >= ranges / 2) ranges = Math.max(1, Math.min(2 * ranges, Math.floor((ranges * sliceMs) / ms)));
        } else {
          until ??= done!.xmax;
          size = nextSize(size, { xids: done!.xids, events: done!.events, cut: done!.cut, ms }, sliceMs, minSliceEvents);
        }
        if (more && compactEvery > 0 && ++slices % compactEvery === 0) await compact(s, now, watch, merge);
        if (more && performance.now() - refreshedAt > Math.max(intervalMs, REFRESH_SPACING * refreshMs)) {
          const began = performance.now();
          for (const tenantId of await dirtyTenants(s)) await step(s, watch, 'refresh', refreshTenant(tenantId, start, now, detailMinRows));
          refreshedAt = performance.now();
          refreshMs = refreshedAt - began;
        }
      }
      // The days due are compacted before the last refresh, which then reads one row per key where
      // it would read every delta of the run (the last refresh of a 10M-event first fold: 47 s).
      await compactDays(s, now, watch);
      const due = new Set([...(await dirtyTenants(s)), ...(await staleTenants(s, start))]);
      for (const tenantId of due) await step(s, watch, 'refresh', refreshTenant(tenantId, start, now, detailMinRows));
      await step(s, watch, 'touch', touchRefreshed(now));
      await mergeMonths(s, watch, merge);
      await buildSessionSets(s, now, watch);
      // Last, every vacuumEveryMs: one table per statement, so that the embedded store serves
      // requests between them (docs/read-model.md, "Upkeep").
      if (performance.now() - vacuumedAt >= vacuumEveryMs) {
        // One statement outside a transaction each: its time includes any wait for the connection.
        await upkeep(s, { vacuumEvents, monthsBloat }, (name, ms) => watch(name, ms, { wait_included: true }));
        vacuumedAt = performance.now();
      }
    },
  };
}

/**
 * The size of a month-merge step: as many keys as fit `sliceMs` at `usPerKey`, at most `max`.
 * `usPerKey` is the slowest recent step's cost per key, forgotten by 5 % per timed step: under
 * load one step's cost per key varies tenfold (58 to 920 µs in the embedded store's worker at load
 * 7 to 9), so a size that follows the last step grows in a quiet moment and overshoots in the next
 * busy one.
 */
interface Merge {
  usPerKey: number;
  max: number;
  sliceMs: number;
}

/**
 * Compaction, a (tenant, day) per transaction, bounded per call: it is never urgent. Then
 * rm_actor_months' merge, in steps (a transaction each) of a bounded number of keys with unmerged
 * deltas (compact.ts, mergeMonthsStep), until none is left or MERGE_STEPS_PER_RUN steps ran. What
 * is due is in the table (its unmerged rows), not in this process. A step's keys follow the
 * slowest recent cost per key (Merge).
 */
async function compact(s: LockedSession, now: Date, watch: Watch, merge: Merge): Promise<void> {
  await compactDays(s, now, watch);
  await mergeMonths(s, watch, merge);
}

async function compactDays(s: LockedSession, now: Date, watch: Watch): Promise<void> {
  const today = now.toISOString().slice(0, 10);
  await step(s, watch, 'settle days', settleDays(today));
  for (const d of await compactionDue(s, today, COMPACT_PER_RUN)) {
    await step(s, watch, `compact ${d.day}`, compactDay(d.tenant_id, d.day));
  }
}

async function mergeMonths(s: LockedSession, watch: Watch, merge: Merge): Promise<void> {
  for (let n = 0; n < MERGE_STEPS_PER_RUN; n++) {
    const limit = Math.max(1, Math.min(merge.max, Math.floor((merge.sliceMs * 1000) / merge.usPerKey)));
    const { rows, ms } = await step(s, watch, 'merge months', mergeMonthsStep(limit), (r) => ({ keys: r.merged?.[0]?.keys, rows: r.merged?.[0]?.rows, limit }));
    const keys = Number(rows.merged?.[0]?.keys ?? 0);
    // A step with few keys says little of the cost per key (part of a step's cost is fixed): timed are full ones,
    // and any that took longer than sliceMs.
    if (keys >= limit / 2 || (keys > 0 && ms > merge.sliceMs)) merge.usPerKey = Math.max((ms * 1000) / keys, 0.95 * merge.usPerKey);
    if (keys < limit) break; // none left
  }
}

/** Release health's sets of the stale days before today (read-model/session-sets.ts), a day per transaction, until none is left or SET_DAYS_PER_RUN were built. */
async function buildSessionSets(s: LockedSession, now: Date, watch: Watch): Promise<void> {
  const today = now.toISOString().slice(0, 10);
  for (let n = 0; n < SET_DAYS_PER_RUN; n++) {
    const { rows } = await step(s, watch, 'session sets', sessionSetsStep(today, 1), (r) => ({ days: r.stale?.[0]?.n }));
    if (!rows.stale?.[0]?.any) break;
  }
}
