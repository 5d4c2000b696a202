// Long loops of the read side over rows or units (a funnel's units, retention's mask pairs,
// active actors' day patterns) run in JS on the server's one event loop: at 10M events each is
// up to seconds of CPU, which would hold up every other request of the process, ingestion
// included. They give the event loop a turn between slices:
//   if (sliceEnds(i)) await setImmediate();
// (a check per item, and a promise only once per slice).

/** Items of a loop between two turns of the event loop (about 10–20 ms of CPU for a funnel's units at 10M events). */
export const ITEMS_PER_SLICE = 1000;

/** Whether item i (counted from 0) is the last of its slice. */
export const sliceEnds = (i: number): boolean => i % ITEMS_PER_SLICE === ITEMS_PER_SLICE - 1;
