import { insertEvents, type EventRecord } from '../../storage/events.js';
import { deadLetterPayload, insertDeadLetters } from '../../storage/invalid-events.js';
import { addUsage, stampQuotaExhaustion } from '../../storage/usage.js';
import { touchSessions } from '../../storage/sessions.js';
import { autoRegisterVersions } from '../../storage/versions.js';
import type { BatchContext, BatchStep } from '../types.js';

/**
 * One transaction per batch, one statement per table: new versions, the accepted events (the
 * unique (tenant, event_id) index drops copies already stored), the dead letters, the usage
 * counter, and the last sign of life of the sessions the events name. The caller acknowledges only after this resolves, that is, after the commit.
 */
export const persist: BatchStep = {
  kind: 'batch',
  name: 'persist',
  async run(ctx: BatchContext, pending) {
    const events: EventRecord[] = [];
    // An event carrying a session_id is that session's latest sign of life (for the timeout job).
    const sessionsSeen = new Map<string, string>();
    for (const c of pending) {
      if (c.duplicateInBatch) continue;
      const { product_slug: _slug, ...record } = c.event!;
      events.push(record);
      if (record.session_id) {
        const prev = sessionsSeen.get(record.session_id);
        if (!prev || Date.parse(record.occurred_at) > Date.parse(prev)) sessionsSeen.set(record.session_id, record.occurred_at);
      }
    }
    events.sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
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
    ctx.inserted = await ctx.db.tx(async (q) => {
      await autoRegisterVersions(q, ctx.tenantId, ctx.newVersions, ctx.receivedAt);
      const inserted = await insertEvents(q, ctx.tenantId, ctx.receivedAt, events);
      await insertDeadLetters(q, ctx.tenantId, ctx.apiKeyId, ctx.receivedAt, letters);
      await addUsage(q, ctx.tenantId, ctx.periodStart, inserted.size);
      if (inserted.size > 0) await stampQuotaExhaustion(q, ctx.tenantId, ctx.periodStart, ctx.allotment, ctx.receivedAt);
      await touchSessions(q, ctx.tenantId, sessionsSeen);
      return inserted;
    });
  },
};
