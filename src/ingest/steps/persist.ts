import { insertEvents, type EventRecord } from '../../storage/events.js';
import { deadLetterPayload, insertDeadLetters } from '../../storage/invalid-events.js';
import { addUsage } from '../../storage/usage.js';
import { autoRegisterVersions } from '../../storage/versions.js';
import type { BatchContext, BatchStep } from '../types.js';

/**
 * One transaction per batch, one statement per table: new versions, the accepted events (the
 * unique (tenant, event_id) index drops copies already stored), the dead letters, and the usage
 * counter. The caller acknowledges only after this resolves, that is, after the commit.
 */
export const persist: BatchStep = {
  kind: 'batch',
  name: 'persist',
  async run(ctx: BatchContext, pending) {
    const events: EventRecord[] = [];
    for (const c of pending) {
      if (c.duplicateInBatch) continue;
      const { product_slug: _slug, ...record } = c.event!;
      events.push(record);
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
      return inserted;
    });
  },
};
