// Turns on PGlite's one connection, and how background jobs yield to requests.
//
// A single statement is a shared turn: it is sent at once, and the worker runs what it was sent in
// order, back to back, with no round trip to this thread between two statements. A transaction
// (BEGIN … COMMIT, several messages), a script, a migration, a checkpoint is an exclusive turn: it
// waits for the statements sent before it to be answered, and whatever comes after it waits for it
// to end (first come, first served, so neither starves).
//
// Requests' turns (and anything not a background job) in flight or waiting are the foreground: a
// job's next step waits for them to drain, so that a request waits behind at most one step of a
// job, not behind one step per statement it runs. Under a load that never drains, a job's step
// goes anyway after JOB_PATIENCE_FACTOR times the length of its previous step (between
// JOB_PATIENCE_MIN_MS and JOB_PATIENCE_MAX_MS): the job then has about a fifth of the connection,
// enough for the rollup job to keep up with saturating ingestion, and a request still waits behind
// one short step at a time (docs/embedded-store.md).

/** Runs fn in a turn on the connection. */
export type Take = <T>(fn: () => Promise<T>) => Promise<T>;

export interface Lanes {
  /** A request's single statement (shared turn). */
  statement: Take;
  /** A request's transaction or script, a migration, a checkpoint (exclusive turn). */
  exclusive: Take;
  /** A background job's single statement: after the foreground drains. */
  jobStatement: Take;
  /** A background job's transaction or script of several statements: after the foreground drains. */
  jobExclusive: Take;
  /**
   * A background job's step sent as one message (a script, run whole by the worker): a shared turn,
   * after the foreground drains, whose length is the `ms` it reports (its time in the worker, not
   * its wait there behind the statements sent before it).
   */
  jobScript: <T extends { ms: number }>(fn: () => Promise<T>) => Promise<T>;
}

export const JOB_PATIENCE_FACTOR = 4;
export const JOB_PATIENCE_MIN_MS = 100;
export const JOB_PATIENCE_MAX_MS = 2000;

export function createLanes(): Lanes {
  let shared = 0;
  let held = false;
  const queue: { exclusive: boolean; go: () => void }[] = [];
  const pump = (): void => {
    while (queue.length > 0 && !held) {
      const next = queue[0]!;
      if (next.exclusive) {
        if (shared > 0) return;
        held = true;
      } else {
        shared++;
      }
      queue.shift();
      next.go();
    }
  };
  const turn = <T>(exclusive: boolean, fn: () => Promise<T>): Promise<T> =>
    new Promise<void>((go) => {
      queue.push({ exclusive, go });
      pump();
    })
      .then(fn)
      .finally(() => {
        if (exclusive) held = false;
        else shared--;
        pump();
      });

  let foreground = 0;
  let drained: (() => void)[] = [];
  const inForeground =
    (exclusive: boolean): Take =>
    <T>(fn: () => Promise<T>): Promise<T> => {
      foreground++;
      return turn(exclusive, fn).finally(() => {
        if (--foreground > 0) return;
        const waiters = drained;
        drained = [];
        for (const w of waiters) w();
      });
    };
  let lastJobStepMs = 0;
  const inBackground =
    (exclusive: boolean, held?: (result: unknown) => number): Take =>
    async <T>(fn: () => Promise<T>): Promise<T> => {
      const since = Date.now();
      const patience = Math.min(JOB_PATIENCE_MAX_MS, Math.max(JOB_PATIENCE_MIN_MS, JOB_PATIENCE_FACTOR * lastJobStepMs));
      while (foreground > 0 && Date.now() - since < patience) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, patience - (Date.now() - since));
          drained.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return turn(exclusive, async () => {
        const began = performance.now();
        let result: T | undefined;
        try {
          return (result = await fn());
        } finally {
          lastJobStepMs = held && result !== undefined ? held(result) : performance.now() - began;
        }
      });
    };

  return {
    statement: inForeground(false),
    exclusive: inForeground(true),
    jobStatement: inBackground(false),
    jobExclusive: inBackground(true),
    jobScript: inBackground(false, (r) => (r as { ms: number }).ms),
  };
}
