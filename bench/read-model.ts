// The read model's side of bench:ingest --rollups: how far behind ingestion what queries see is
// (lag), a prober of 100-event batches, and the database time to fold a backlog. See
// docs/benchmarks.md, "Read model".
import { storeRollupJob } from '../src/jobs/all.js';
import { rollupJob } from '../src/jobs/rollups.js';
import { startJobs } from '../src/jobs/runner.js';
import type { Db } from '../src/storage/db.js';

/**
 * Acknowledgements over time. lag(visible) is how long ago the oldest event that queries do not
 * see yet was acknowledged: 0 when they see every acknowledged event.
 */
export class LagTracker {
  private readonly times: number[] = [];
  private readonly totals: number[] = [];
  ack(total: number): void {
    this.times.push(performance.now());
    this.totals.push(total);
  }
  lag(visible: number, now = performance.now()): number {
    let lo = 0;
    let hi = this.totals.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.totals[mid]! > visible) hi = mid;
      else lo = mid + 1;
    }
    return lo === this.totals.length ? 0 : (now - this.times[lo]!) / 1000;
  }
}

/**
 * Every `everyMs`, asks the server what the read model holds for the tenant (coverage: events
 * folded in the window; the bench's events are all within the last hour) and prints the lag.
 * Returns a stop function that resolves to the samples, in seconds.
 */
export function sampleLag(
  tracker: LagTracker,
  visible: () => Promise<number>,
  acked: () => number,
  everyMs = 5000,
): () => Promise<{ at: number; lag: number }[]> {
  const samples: { at: number; lag: number }[] = [];
  const t0 = performance.now();
  let busy = Promise.resolve();
  const timer = setInterval(() => {
    busy = busy.then(async () => {
      const now = performance.now();
      const v = await visible().catch(() => -1);
      if (v < 0) return;
      const lag = tracker.lag(v, now);
      samples.push({ at: (now - t0) / 1000, lag });
      console.log(`  read model: t=${((now - t0) / 1000).toFixed(0)}s lag ${lag.toFixed(1)} s (visible ${v}, acknowledged ${acked()})`);
    });
  }, everyMs);
  return async () => {
    clearInterval(timer);
    await busy;
    return samples;
  };
}

/** One sender of 100-event batches, one every `everyMs`, until stopped: their latencies. */
export function probe(send: () => Promise<unknown>, everyMs = 200): () => Promise<number[]> {
  const latencies: number[] = [];
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const t = performance.now();
      await send();
      latencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, Math.max(0, everyMs - (performance.now() - t))));
    }
  })();
  return async () => {
    stop = true;
    await loop;
    return latencies;
  };
}

/**
 * Database time to keep the read model current, per event: `insert` writes a backlog of `events`
 * unfolded events, then one run of the real rollup job (fold, snapshots, compaction) on `db`,
 * timed. On the raw side's store, so no request competes with it: PostgreSQL's job as a server runs it
 * (`postgres`), the embedded store's in slices of 10 s (its server's are 200 ms, for the requests waiting).
 */
export async function foldBacklog(
  db: Db,
  postgres: boolean,
  events: number,
  insert: () => Promise<number>,
): Promise<{ events: number; seconds: number; us_per_event: number }> {
  const silent = { warn() {}, info() {}, error() {} } as never;
  const job = () => (postgres ? storeRollupJob(60, true) : rollupJob(60));
  const first = startJobs(db, [job()], silent);
  await first.runOnce('rollups'); // what the raw phases left, folded first
  await first.stop();
  let n = 0;
  while (n < events) n += await insert();
  const jobs = startJobs(db, [job()], silent);
  const t0 = performance.now();
  const ok = await jobs.runOnce('rollups');
  const seconds = (performance.now() - t0) / 1000;
  await jobs.stop();
  if (!ok) throw new Error('the rollup job failed on the backlog');
  return { events: n, seconds, us_per_event: Number(((seconds * 1e6) / n).toFixed(2)) };
}
