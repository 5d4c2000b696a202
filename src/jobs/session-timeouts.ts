import { LOCKS } from '../storage/db.js';
import { purgeEarlySigns, purgePendingEnds, timeOutSessions } from '../storage/sessions.js';
import type { Job } from './runner.js';

const CHUNK = 5000;
const PENDING_END_TTL_MS = 3_600_000;

/**
 * Ends sessions with no end whose last sign of life (start, or the latest event carrying the
 * session_id) is older than SESSION_TIMEOUT_MINUTES: end_reason `timeout`, ended_at = that last
 * sign of life. Also forgets ends that waited more than an hour for their start.
 */
export function sessionTimeoutJob(timeoutMinutes: number, intervalMs = 60_000): Job {
  return {
    name: 'session-timeouts',
    lockKey: LOCKS.sessionTimeouts,
    intervalMs,
    async run(q, now) {
      const cutoff = new Date(now.getTime() - timeoutMinutes * 60_000);
      while ((await timeOutSessions(q, cutoff, CHUNK)) === CHUNK) {
        // next chunk
      }
      await purgePendingEnds(q, new Date(now.getTime() - PENDING_END_TTL_MS));
      await purgeEarlySigns(q, cutoff);
    },
  };
}
