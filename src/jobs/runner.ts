import type { FastifyBaseLogger } from 'fastify';
import type { Db, LockedSession } from '../storage/db.js';

// Background jobs run in one process at a time: each run first takes the job's PostgreSQL
// advisory lock and is skipped where another process holds it. A run never overlaps itself.
export interface Job {
  name: string;
  lockKey: number;
  intervalMs: number;
  run(s: LockedSession, now: Date, log: FastifyBaseLogger): Promise<void>;
}

export interface JobRunner {
  /** Runs one job now (tests and operators); resolves false when another process held its lock. */
  runOnce(name: string): Promise<boolean>;
  stop(): Promise<void>;
}

export function startJobs(db: Db, jobs: Job[], log: FastifyBaseLogger, now: () => Date = () => new Date()): JobRunner {
  const running = new Map<string, Promise<boolean>>();
  const runJob = (job: Job): Promise<boolean> => {
    const current = running.get(job.name);
    if (current) return current;
    const p = db
      .tryWithLock(job.lockKey, async (q) => {
        await job.run(q, now(), log);
        return true;
      })
      .then((ran) => ran === true)
      .catch((err: unknown) => {
        log.warn({ err, job: job.name }, 'background job failed; it will run again');
        return false;
      })
      .finally(() => running.delete(job.name));
    running.set(job.name, p);
    return p;
  };
  const timers = jobs.map((job) => {
    const timer = setInterval(() => void runJob(job), job.intervalMs);
    timer.unref();
    return timer;
  });
  return {
    async runOnce(name) {
      const job = jobs.find((j) => j.name === name);
      if (!job) throw new Error(`no job named ${name}`);
      return runJob(job);
    },
    async stop() {
      for (const t of timers) clearInterval(t);
      await Promise.all(running.values());
    },
  };
}
