import type { Config } from '../config.js';
import type { Plans } from '../domain/plans.js';
import { actorErasureJob, eventRetentionJob } from './data-rights.js';
import { deadLetterRetentionJob } from './dead-letter-retention.js';
import { productPurgeJob } from './product-purge.js';
import { rollupJob } from './rollups.js';
import type { Job } from './runner.js';
import { sessionTimeoutJob } from './session-timeouts.js';

/** Every background job a server process runs (each in one process at a time). */
export function backgroundJobs(config: Config, plans: Plans): Job[] {
  return [
    deadLetterRetentionJob(config.deadLetterRetentionDays),
    productPurgeJob(),
    sessionTimeoutJob(config.sessionTimeoutMinutes),
    // The embedded store's one connection is shared with requests: short slices (docs/embedded-store.md).
    rollupJob(config.rollupIntervalSeconds, config.databaseUrl ? 10_000 : 250),
    actorErasureJob(),
    eventRetentionJob(config.eventRetentionDays, plans),
  ];
}
