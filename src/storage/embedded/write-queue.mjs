// @ts-check
// The worker's write lane (worker.mjs): batches' writes and a background job's scripts, smallest
// first. A write's size is the characters of its parameters (a batch's events travel as one JSON
// string), so a 100-event batch does not wait behind 1000-event ones already queued; a script (a
// job's step) counts as bigger than any write. So that a stream of small writes cannot starve a
// big one or a job's step, a message that MAX_PASSED later ones have passed goes next. Writes of
// one size keep the order they came in. Plain JavaScript (type-checked through JSDoc) because the
// worker thread loads it.

export const MAX_PASSED = 4;

/**
 * @template {{ op: string, params?: unknown[] }} M
 * @returns {{ push: (msg: M) => void, take: () => M | undefined, readonly length: number }}
 */
export function createWriteQueue() {
  /** @type {{ msg: M, size: number, passed: number }[]} */
  const waiting = [];
  return {
    push: (msg) => void waiting.push({ msg, size: sizeOf(msg), passed: 0 }),
    take() {
      // Passes only ever go to messages ahead of the one taken, so the first waiting has been
      // passed at least as often as any other: the bound need only be checked on it.
      const [head] = waiting;
      if (!head) return undefined;
      let next = head;
      if (head.passed < MAX_PASSED) for (const w of waiting) if (w.size < next.size) next = w;
      const at = waiting.indexOf(next);
      for (const w of waiting.slice(0, at)) w.passed++;
      waiting.splice(at, 1);
      return next.msg;
    },
    get length() {
      return waiting.length;
    },
  };
}

/** @param {{ op: string, params?: unknown[] }} msg */
function sizeOf(msg) {
  if (msg.op === 'script') return Infinity;
  let size = 0;
  for (const p of msg.params ?? []) {
    if (typeof p === 'string') size += p.length;
    else if (Array.isArray(p)) for (const x of p) size += typeof x === 'string' ? x.length : 8;
    else size += 8;
  }
  return size;
}
