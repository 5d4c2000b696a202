import { AsyncLocalStorage } from 'node:async_hooks';

// Reads that may be long (reports, funnels, the explorer) run "in the read lane": on the embedded
// store, whose one connection ingestion shares, their statements wait behind batches' writes
// instead of passing them (src/storage/embedded/worker.mjs), so a write waits for at most the read
// statement running, never for a queue of them. On PostgreSQL the lane changes nothing. The HTTP
// layer marks the requests that only read (src/http/plugins/read-lane.ts).

const lane = new AsyncLocalStorage<true>();

/** Runs fn, and everything it awaits, in the read lane. */
export function inReadLane<T>(fn: () => T): T {
  return lane.run(true, fn);
}

/** Whether the caller runs in the read lane. */
export function isReadLane(): boolean {
  return lane.getStore() === true;
}
