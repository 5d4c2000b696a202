import { LOCKS } from '../storage/db.js';
import { purgeDeadLetters } from '../storage/invalid-events.js';
import type { Job } from './runner.js';

const CHUNK = 5000;

/** Deletes dead letters older than the retention period, in bounded chunks so no run holds locks for long. */
export function deadLetterRetentionJob(retentionDays: number): Job {
  return {
    name: 'dead-letter-retention',
    lockKey: LOCKS.retention,
    intervalMs: 10 * 60_000,
    async run(q, now) {
      const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
      while ((await purgeDeadLetters(q, cutoff, CHUNK)) === CHUNK) {
        // keep going until a chunk comes back short
      }
    },
  };
}
