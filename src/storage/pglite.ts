import { mkdirSync, existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from '../errors.js';
import type { Db, Queryable } from './db.js';

// The embedded store. PGlite (PostgreSQL in WebAssembly) runs in its own worker thread
// (pglite-worker.mjs), so a query never blocks the HTTP event loop, and parsing and validating
// the next batch overlaps with writing this one. PGlite has one connection: this side serialises
// access with a mutex, held by a transaction for its whole length.
//
// Durability (docs/embedded-store.md): PostgreSQL runs with fsync off in PGlite, but its writes reach
// the OS page cache as statements complete, so a killed process loses nothing committed. With
// syncOnCommit, every write transaction is followed, before it resolves, by an fsync of the WAL
// (one pass shared by all commits waiting at that moment), and every five minutes we CHECKPOINT
// and fsync the whole data directory.

/** Coalesces concurrent requests into as few runs as possible (group commit). */
function groupSync(run: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  return () => {
    if (!running) {
      running = run().finally(() => (running = undefined));
      return running;
    }
    next ??= running
      .catch(() => {})
      .then(() => {
        next = undefined;
        running = run().finally(() => (running = undefined));
        return running;
      });
    return next;
  };
}

type Reply = { id: number; result?: unknown; error?: { message: string; code?: string; detail?: string } };

export async function openPglite(dataDir: string | undefined, syncOnCommit: boolean): Promise<Db> {
  if (dataDir && !existsSync(dataDir)) mkdirSync(dataDir, { recursive: true });
  const worker = new Worker(new URL('./pglite-worker.mjs', import.meta.url), { workerData: { dataDir, syncOnCommit } });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let nextId = 1;
  let closed = false;

  const failAll = (err: unknown) => {
    closed = true;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const ready = new Promise<void>((resolve, reject) => pending.set(0, { resolve: () => resolve(), reject }));
  worker.on('message', (msg: Reply) => {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code, detail: msg.error.detail }));
    else p.resolve(msg.result);
  });
  worker.on('error', (err) => failAll(new StoreUnavailableError(err)));
  worker.on('exit', () => failAll(new StoreUnavailableError()));
  await ready;

  const call = (op: string, sql?: string, params?: unknown[]): Promise<unknown> => {
    if (closed) return Promise.reject(new StoreUnavailableError());
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, op, sql, params });
    });
  };

  let tail: Promise<unknown> = Promise.resolve();
  // Requests' statements (and anything not a background job) in flight or waiting: a job's next
  // step waits for them to drain (up to JOB_PATIENCE_MS), so that a request waits behind at most
  // one step of a job, not behind one step per statement it runs.
  let foreground = 0;
  let drained: (() => void)[] = [];
  const JOB_PATIENCE_MS = 2000;
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    foreground++;
    const run = tail.then(fn).finally(() => {
      if (--foreground > 0) return;
      const waiters = drained;
      drained = [];
      for (const w of waiters) w();
    });
    tail = run.catch(() => {});
    return run;
  };
  const background = async <T>(fn: () => Promise<T>): Promise<T> => {
    const since = Date.now();
    while (foreground > 0 && Date.now() - since < JOB_PATIENCE_MS) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, JOB_PATIENCE_MS - (Date.now() - since));
        drained.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const run = tail.then(fn);
    tail = run.catch(() => {});
    return run;
  };

  const direct: Queryable = {
    query: async <T>(sql: string, params?: unknown[]) => (await call('query', sql, params)) as T[],
    exec: async (sql: string) => {
      await call('exec', sql);
    },
  };
  const syncWal = syncOnCommit && dataDir ? groupSync(async () => void (await call('sync'))) : async () => {};

  let checkpointTimer: NodeJS.Timeout | undefined;
  if (dataDir && syncOnCommit) {
    checkpointTimer = setInterval(() => void exclusive(() => call('checkpoint')).catch(() => {}), 5 * 60_000);
    checkpointTimer.unref();
  }

  /** BEGIN … COMMIT as one turn on the connection (taken by `take`), then the WAL to disk. */
  const inTransaction = async <T>(take: <R>(fn: () => Promise<R>) => Promise<R>, fn: (q: Queryable) => Promise<T>): Promise<T> => {
    const result = await take(async () => {
      await direct.exec('BEGIN');
      try {
        const r = await fn(direct);
        await direct.exec('COMMIT');
        return r;
      } catch (err) {
        await direct.exec('ROLLBACK').catch(() => {});
        throw err;
      }
    });
    await syncWal();
    return result;
  };

  const db: Db = {
    kind: 'pglite',
    query: (sql, params) => exclusive(() => direct.query(sql, params)),
    exec: (sql) => exclusive(() => direct.exec(sql)),
    tx: (fn) => inTransaction(exclusive, fn),
    async write<T>(sql: string, params?: unknown[]) {
      const rows = await exclusive(() => direct.query<T>(sql, params));
      await syncWal();
      return rows;
    },
    // One process owns the embedded store, so its advisory locks are always free. A job takes
    // the connection per statement or transaction (db's own), never for its whole run, so that
    // requests are served between its steps.
    tryWithLock: (_key, fn) =>
      fn({
        query: (sql, params) => background(() => direct.query(sql, params)),
        exec: (sql) => background(() => direct.exec(sql)),
        tx: (body) => inTransaction(background, body),
      }),
    // Migrations: the whole run at once.
    withLock: (_key, fn) => exclusive(() => fn(direct)),
    async ping() {
      await db.query('SELECT 1');
    },
    async close() {
      if (closed) return;
      if (checkpointTimer) clearInterval(checkpointTimer);
      await exclusive(() => call('close')).catch(() => {});
      closed = true;
      await worker.terminate();
    },
  };
  return db;
}
