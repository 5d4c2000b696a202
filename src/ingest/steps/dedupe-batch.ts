import type { BatchStep } from '../types.js';

/**
 * A batch may carry one event_id twice: the first valid copy is the one written; later copies
 * are reported accepted with duplicate: true, like a copy already in the store.
 */
export const dedupeBatch: BatchStep = {
  kind: 'batch',
  name: 'dedupe-batch',
  async run(_ctx, pending) {
    const seen = new Set<string>();
    for (const c of pending) {
      const id = c.event!.event_id;
      if (seen.has(id)) c.duplicateInBatch = true;
      else seen.add(id);
    }
  },
};
