import { setImmediate } from 'node:timers/promises';

// Long loops of the read side over rows or units (a funnel's units, retention's mask pairs,
// active actors' day patterns) run in JS on the server's one event loop: at 10M events each is
// up to seconds of CPU, which would hold up every other request of the process, ingestion
// included. They call this once per item, and it serves the event loop between slices.

/** Items of a loop between two turns of the event loop (about 10–20 ms of CPU for a funnel's units at 10M events). */
export const ITEMS_PER_SLICE = 1000;

/** After every ITEMS_PER_SLICE-th item (i counted from 0), a turn of the event loop. */
export async function endOfSlice(i: number): Promise<void> {
  if (i % ITEMS_PER_SLICE === ITEMS_PER_SLICE - 1) await setImmediate();
}
