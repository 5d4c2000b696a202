import type { Pending } from '../judgement.js';
import type { AdmittedEvent } from '../types.js';

/**
 * A batch may carry one event_id twice: the first valid copy is the one written; later copies
 * are reported accepted with duplicate: true, like a copy already in the store.
 */
export function dedupeBatch(events: readonly Pending<AdmittedEvent>[]): { unique: AdmittedEvent[]; duplicates: Set<number> } {
  const seen = new Set<string>();
  const unique: AdmittedEvent[] = [];
  const duplicates = new Set<number>();
  for (const { index, value } of events) {
    if (seen.has(value.event_id)) duplicates.add(index);
    else {
      seen.add(value.event_id);
      unique.push(value);
    }
  }
  return { unique, duplicates };
}
