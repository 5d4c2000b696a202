import { isStorableString } from '../domain/text.js';
import type { Db } from '../storage/db.js';
import { writeEventBatch } from '../storage/event-batch.js';
import { deadLetterPayload, type DeadLetter } from '../storage/invalid-events.js';
import type { SessionSigns } from './caches.js';
import type { AdmittedEvent, Rejection, VersionRef } from './types.js';

export interface BatchWrite {
  tenantId: string;
  apiKeyId: string;
  receivedAt: Date;
  periodStart: Date;
  allotment: number | null;
  capped: boolean;
  events: AdmittedEvent[];
  rejected: { raw: unknown; rejection: Rejection }[];
  register: VersionRef[];
}

function isSorted(events: AdmittedEvent[]): boolean {
  for (let i = 1; i < events.length; i++) if (events[i - 1]!.event_id > events[i]!.event_id) return false;
  return true;
}

/** The product as sent, for the dead letter, when it can be stored. */
function productAsSent(raw: unknown): string | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  const product = r.product ?? r.source_app;
  return typeof product === 'string' && isStorableString(product) ? product : null;
}

/**
 * The end of the event pipeline: the batch in one statement (storage/event-batch.ts): new
 * versions, the accepted events (the unique (tenant, event_id) index drops copies already
 * stored), the dead letters, the usage counter, and the last sign of life of the sessions the
 * events name. The caller acknowledges only after this resolves, that is, after the commit.
 * Returns the ids that were new to the store.
 */
export async function writeBatch(db: Db, signs: SessionSigns, w: BatchWrite): Promise<Set<string>> {
  // An event carrying a session_id is that session's latest sign of life (for the timeout job).
  const latest = new Map<string, { ts: string; ms: number }>();
  for (const e of w.events) {
    if (!e.session_id) continue;
    const prev = latest.get(e.session_id);
    if (prev?.ts === e.occurred_at) continue;
    const ms = Date.parse(e.occurred_at);
    if (prev === undefined || ms > prev.ms) latest.set(e.session_id, { ts: e.occurred_at, ms });
  }
  // Clients send UUIDv7 ids in order, so the sort is usually a check; sorted rows lock in one order.
  const events = isSorted(w.events) ? w.events : [...w.events].sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
  const letters: DeadLetter[] = w.rejected.map(({ raw, rejection }) => ({
    kind: 'event',
    reason: rejection.reason,
    message: rejection.message,
    product: productAsSent(raw),
    payload: deadLetterPayload(raw),
  }));
  const sessionsSeen = signs.due(w.tenantId, latest);
  const inserted = await writeEventBatch(db, {
    tenantId: w.tenantId,
    apiKeyId: w.apiKeyId,
    receivedAt: w.receivedAt,
    periodStart: w.periodStart,
    allotment: w.allotment,
    capped: w.capped,
    events,
    letters,
    newVersions: w.register,
    sessionsSeen,
  });
  signs.remember(w.tenantId, sessionsSeen);
  return inserted;
}
