import type { Plans } from '../domain/plans.js';
import { LOCKS } from '../storage/db.js';
import { eraseActor, finishErasure, pendingErasures, purgeOldEvents, tenantRetentions } from '../storage/data-rights.js';
import type { Job } from './runner.js';

const CHUNK = 5000;
const DAY_MS = 86_400_000;

/**
 * Runs the erasures asked for with DELETE /v1/actors/{actorId}, oldest first, each in one
 * transaction with its audit row's completion. A failure is recorded on the row (status failed).
 */
export function actorErasureJob(intervalMs = 5_000): Job {
  return {
    name: 'actor-erasures',
    lockKey: LOCKS.actorErasures,
    intervalMs,
    async run(s, now) {
      for (const e of await pendingErasures(s, 10)) {
        try {
          await s.tx(async (q) => finishErasure(q, e.id, { erased: await eraseActor(q, e.tenant_id, e.actor_id) }, now));
        } catch (err) {
          await finishErasure(s, e.id, { error: err instanceof Error ? err.message : String(err) }, now);
        }
      }
    },
  };
}

/**
 * Deletes raw events older than each tenant's retention: the tenant's own setting, else its
 * plan's, else EVENT_RETENTION_DAYS; 0 keeps them forever. Derived data (the rollups) stays.
 */
export function eventRetentionJob(defaultDays: number, plans: Plans, intervalMs = 60 * 60_000): Job {
  return {
    name: 'event-retention',
    lockKey: LOCKS.eventRetention,
    intervalMs,
    async run(s, now) {
      for (const t of await tenantRetentions(s)) {
        const days = t.event_retention_days ?? plans[t.plan as keyof Plans]?.event_retention_days ?? defaultDays;
        if (!days) continue;
        const cutoff = new Date(now.getTime() - days * DAY_MS);
        while ((await purgeOldEvents(s, t.id, cutoff, CHUNK)) === CHUNK) {
          // until a chunk comes back short
        }
      }
    },
  };
}
