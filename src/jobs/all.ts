import type { Config } from '../config.js';
import type { Plans } from '../domain/plans.js';
import { actorErasureJob, eventRetentionJob } from './data-rights.js';
import { deadLetterRetentionJob } from './dead-letter-retention.js';
import { productPurgeJob } from './product-purge.js';
import { MAX_WIDTH, rollupJob, SLICE_MIN_EVENTS_PG, type RollupOptions } from './rollups.js';
import type { Job } from './runner.js';
import { sessionTimeoutJob } from './session-timeouts.js';

/** Every background job a server process runs (each in one process at a time). */
export function backgroundJobs(config: Config, plans: Plans): Job[] {
  return [
    deadLetterRetentionJob(config.deadLetterRetentionDays),
    productPurgeJob(),
    sessionTimeoutJob(config.sessionTimeoutMinutes),
    storeRollupJob(config.rollupIntervalSeconds, !!config.databaseUrl),
    actorErasureJob(),
    eventRetentionJob(config.eventRetentionDays, plans),
  ];
}

/**
 * The rollup job as a server runs it on its store (`postgres`: a PostgreSQL server, else the
 * embedded store), with `extra` options (a bench's step log).
 *
 * PostgreSQL: slices of at least SLICE_MIN_EVENTS_PG events (requests have connections of their own),
 * looking as far as they may from the first run: a slice's budget in events bounds it, and narrow
 * first slices split a backlog whose transactions lie apart (an import's batches among other
 * writers') into several slices, each writing every day again, which compaction then merges: a
 * 10M-event backlog over 1,222 transaction ids took 1,069 s (fold 590 s, compaction 400 s).
 * The embedded store's one connection is shared with requests: short slices of about 200 ms
 * (docs/embedded-store.md), starting narrow (a slice is one statement there, and a request waits for
 * the whole of it), widening from the time each takes. Each transaction id there is one batch of up
 * to 1000 events. Not 100 ms: a step costs 40 to 100 ms under load whatever it folds, so a one-batch
 * slice already took longer than 100 ms and slices stayed at one batch or two, at 140 to 300 µs of
 * worker time per event folded (docs/read-model.md, "How big a slice is"). A step that holds the
 * store longer than 250 ms is logged.
 */
export function storeRollupJob(intervalSeconds: number, postgres: boolean, extra: RollupOptions = {}): Job {
  return postgres
    ? rollupJob(intervalSeconds, { minSliceEvents: SLICE_MIN_EVENTS_PG, initialWidth: MAX_WIDTH, ...extra })
    : rollupJob(intervalSeconds, { sliceMs: 200, initialWidth: 4, compactEvery: 8, slowStepMs: 250, vacuumEvents: false, ...extra });
}
