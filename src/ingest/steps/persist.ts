import { writeEventBatch } from '../../storage/event-batch.js';
import type { EventRecord } from '../../storage/events.js';
import { deadLetterPayload } from '../../storage/invalid-events.js';
import type { BatchContext, BatchStep } from '../types.js';

/**
 * Writes the batch in one statement (storage/event-batch.ts): new versions, the accepted events
 * (the unique (tenant, event_id) index drops copies already stored), the dead letters, the usage
 * counter, and the last sign of life of the sessions the events name. The caller acknowledges
 * only after this resolves, that is, after the commit.
 */
// The latest sign of life this process has written (and seen committed) per session, in ms: an
// event no newer than it cannot move the stored value, so it is not sent again. Exact, since the
// stored value only moves forward (and whatever another process wrote is newer still).
const SIGNS_KEPT = 100_000;
const signsWritten = new Map<string, number>();
const signKey = (tenantId: string, sessionId: string): string => `${tenantId}\u0001${sessionId}`;

function unwrittenSigns(tenantId: string, seen: Map<string, { ts: string; ms: number }>): Map<string, string> {
  const due = new Map<string, string>();
  for (const [sid, { ts, ms }] of seen) {
    const written = signsWritten.get(signKey(tenantId, sid));
    if (written === undefined || ms > written) due.set(sid, ts);
  }
  return due;
}

function rememberSigns(tenantId: string, written: Map<string, string>): void {
  if (signsWritten.size + written.size > SIGNS_KEPT) signsWritten.clear();
  for (const [sid, ts] of written) {
    const key = signKey(tenantId, sid);
    signsWritten.set(key, Math.max(signsWritten.get(key) ?? -Infinity, Date.parse(ts)));
  }
}

function isSorted(events: EventRecord[]): boolean {
  for (let i = 1; i < events.length; i++) if (events[i - 1]!.event_id > events[i]!.event_id) return false;
  return true;
}

export const persist: BatchStep = {
  kind: 'batch',
  name: 'persist',
  async run(ctx: BatchContext, pending) {
    const events: EventRecord[] = [];
    // An event carrying a session_id is that session's latest sign of life (for the timeout job).
    const latest = new Map<string, { ts: string; ms: number }>();
    for (const c of pending) {
      if (c.duplicateInBatch) continue;
      const record = c.event!;
      events.push(record);
      if (record.session_id) {
        const prev = latest.get(record.session_id);
        if (prev?.ts !== record.occurred_at) {
          const ms = Date.parse(record.occurred_at);
          if (prev === undefined || ms > prev.ms) latest.set(record.session_id, { ts: record.occurred_at, ms });
        }
      }
    }
    // Clients send UUIDv7 ids in order, so the sort is usually a check.
    if (!isSorted(events)) events.sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
    const letters = ctx.candidates
      .filter((c) => c.rejection)
      .map((c) => {
        const raw = c.raw as Record<string, unknown> | null;
        const product = raw && typeof raw === 'object' ? (raw.product ?? raw.source_app) : undefined;
        return {
          kind: 'event' as const,
          reason: c.rejection!.reason,
          message: c.rejection!.message,
          product: typeof product === 'string' && product.isWellFormed() && !product.includes('\u0000') ? product : null,
          payload: deadLetterPayload(c.raw),
        };
      });
    const signs = unwrittenSigns(ctx.tenantId, latest);
    ctx.inserted = await writeEventBatch(ctx.db, {
      tenantId: ctx.tenantId,
      apiKeyId: ctx.apiKeyId,
      receivedAt: ctx.receivedAt,
      periodStart: ctx.periodStart,
      allotment: ctx.allotment,
      events,
      letters,
      newVersions: ctx.newVersions,
      sessionsSeen: signs,
    });
    rememberSigns(ctx.tenantId, signs);
  },
};
