import { mkdirSync, existsSync } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { StoreUnavailableError } from '../errors.js';
import type { Db, Queryable } from './db.js';

// The embedded store. PGlite (PostgreSQL in WebAssembly) runs in its own worker thread
// (pglite-worker.mjs), so a query never blocks the HTTP event loop, and parsing and validating
// the next batch overlaps with writing this one. PGlite has one connection: single statements are
// pipelined to it, and a transaction takes it alone for its whole length (see `turn` below).
//
// Durability (docs/embedded-store.md): PostgreSQL runs with fsync off in PGlite, but its writes reach
// the OS page cache as statements complete, so a killed process loses nothing committed. With
// syncOnCommit, every write transaction is followed, before it resolves, by an fsync of the WAL
// (one pass shared by all commits waiting at that moment), and every five minutes we CHECKPOINT
// and fsync the whole data directory.

async function fsyncFile(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * fsyncs the WAL segments and their folder. From this thread, not the worker's: there every step
 * of it (open, fsync, close of each file) waited for the statement running, and a pass took 60 to
 * 85 ms under load instead of 1 to 9. Any descriptor's fsync flushes the file's dirty pages, and
 * the commit's writes reached the page cache before its answer left the worker. A segment that a
 * checkpoint recycles between the listing and its open is not lost: the pass starts over once.
 */
async function syncWalFiles(walDir: string, retry = true): Promise<void> {
  try {
    const names = await readdir(walDir);
    await Promise.all(names.filter((n) => /^[0-9A-F]{24}$/.test(n)).map((n) => fsyncFile(join(walDir, n))));
    await fsyncFile(walDir);
  } catch (err) {
    if (!retry || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await syncWalFiles(walDir, false);
  }
}

/** fsyncs every file of the data directory, and the folders (after our checkpoints). */
async function fsyncTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await fsyncTree(path);
    else if (entry.isFile()) await fsyncFile(path).catch(() => {});
  }
  await fsyncFile(dir).catch(() => {});
}

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

type Reply = { id: number; result?: unknown; error?: { message: string; code?: string; detail?: string }; catalogChanged?: boolean };

/**
 * Fills an empty data directory from a backup (Db.dumpDataDir's tarball). Runs PGlite on this
 * thread: restore is an offline operation, with no server owning the folder.
 */
export async function restorePglite(dataDir: string, tarball: Uint8Array): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite');
  mkdirSync(dataDir, { recursive: true });
  const pg = new PGlite({ dataDir, loadDataDir: new Blob([new Uint8Array(tarball)]) });
  await pg.waitReady;
  await pg.query('SELECT 1');
  await pg.close();
}

/** PostgreSQL's shared buffers in the embedded store (its default, 128 MB, is resident once touched). */
const SHARED_BUFFERS_MB = 16;

/** A new data directory's initdb and migrations, in a process that ends with them (pglite-init.mjs says why). */
async function initialise(dataDir: string): Promise<void> {
  const script = fileURLToPath(new URL('./pglite-init.mjs', import.meta.url));
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [script, dataDir, String(SHARED_BUFFERS_MB)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`initialising the embedded store in ${dataDir} failed: ${err.trim().split('\n').pop() ?? code}`))));
  });
}

export async function openPglite(dataDir: string | undefined, syncOnCommit: boolean): Promise<Db> {
  if (dataDir && !existsSync(dataDir)) mkdirSync(dataDir, { recursive: true });
  if (dataDir && !existsSync(join(dataDir, 'PG_VERSION'))) {
    await initialise(dataDir);
    if (syncOnCommit) await fsyncTree(dataDir);
  }
  const worker = new Worker(new URL('./pglite-worker.mjs', import.meta.url), { workerData: { dataDir, syncOnCommit, sharedBuffersMb: SHARED_BUFFERS_MB } });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let nextId = 1;
  let closed = false;

  const failAll = (err: unknown) => {
    closed = true;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const ready = new Promise<void>((resolve, reject) => pending.set(0, { resolve: () => resolve(), reject }));
  // The catalog cache (Db.catalogRead). A reply that carries catalogChanged answers the statement
  // or COMMIT that committed a change to it: the cache is dropped before that reply resolves.
  const CATALOG_ENTRIES = 10_000;
  const catalog = new Map<string, unknown>();
  let catalogEpoch = 0;

  worker.on('message', (msg: Reply) => {
    if (msg.catalogChanged) {
      catalogEpoch++;
      catalog.clear();
    }
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

  // Turns on the one connection. A single statement is a shared turn: it is sent at once, and the
  // worker runs what it was sent in order, back to back, with no round trip to this thread between
  // two statements. A transaction (BEGIN … COMMIT, several messages), a script, a migration, a
  // checkpoint is an exclusive turn: it waits for the statements sent before it to be answered, and
  // whatever comes after it waits for it to end (first come, first served, so neither starves).
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

  // Requests' turns (and anything not a background job) in flight or waiting: a job's next step
  // waits for them to drain (up to JOB_PATIENCE_MS), so that a request waits behind at most one
  // step of a job, not behind one step per statement it runs.
  let foreground = 0;
  let drained: (() => void)[] = [];
  const JOB_PATIENCE_MS = 2000;
  const inForeground =
    (exclusive: boolean) =>
    <T>(fn: () => Promise<T>): Promise<T> => {
      foreground++;
      return turn(exclusive, fn).finally(() => {
        if (--foreground > 0) return;
        const waiters = drained;
        drained = [];
        for (const w of waiters) w();
      });
    };
  const inBackground =
    (exclusive: boolean) =>
    async <T>(fn: () => Promise<T>): Promise<T> => {
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
      return turn(exclusive, fn);
    };
  const [statement, exclusive] = [inForeground(false), inForeground(true)];
  const [jobStatement, jobExclusive] = [inBackground(false), inBackground(true)];

  const direct: Queryable = {
    query: async <T>(sql: string, params?: unknown[]) => (await call('query', sql, params)) as T[],
    exec: async (sql: string) => {
      await call('exec', sql);
    },
  };
  const syncWal = syncOnCommit && dataDir ? groupSync(() => syncWalFiles(join(dataDir, 'pg_wal'))) : async () => {};

  let checkpointTimer: NodeJS.Timeout | undefined;
  if (dataDir && syncOnCommit) {
    // CHECKPOINT, then the whole folder to disk, with the connection held throughout.
    const checkpoint = () => exclusive(async () => {
      await direct.exec('CHECKPOINT');
      await fsyncTree(dataDir);
    });
    checkpointTimer = setInterval(() => void checkpoint().catch(() => {}), 5 * 60_000);
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
    query: (sql, params) => statement(() => direct.query(sql, params)),
    // A script may hold several statements, BEGIN and COMMIT among them: the connection alone.
    exec: (sql) => exclusive(() => direct.exec(sql)),
    tx: (fn) => inTransaction(exclusive, fn),
    async write<T>(sql: string, params?: unknown[]) {
      // The worker runs a batch's write after the short statements waiting (pglite-worker.mjs).
      const rows = await statement(async () => (await call('write', sql, params)) as T[]);
      await syncWal();
      return rows;
    },
    // One process owns the embedded store, so its advisory locks are always free. A job takes
    // the connection per statement or transaction (db's own), never for its whole run, so that
    // requests are served between its steps.
    tryWithLock: (_key, fn) =>
      fn({
        query: (sql, params) => jobStatement(() => direct.query(sql, params)),
        exec: (sql) => jobExclusive(() => direct.exec(sql)),
        tx: (body) => inTransaction(jobExclusive, body),
      }),
    // Migrations: the whole run at once.
    withLock: (_key, fn) => exclusive(() => fn(direct)),
    async catalogRead<T>(key: string, load: () => Promise<T>, cacheIf?: (value: T) => boolean): Promise<T> {
      if (catalog.has(key)) return catalog.get(key) as T;
      const epoch = catalogEpoch;
      const value = await load();
      // A change committed while this read was on its way may not be in it: keep it only if none was.
      if (epoch === catalogEpoch && (cacheIf?.(value) ?? true)) {
        if (catalog.size >= CATALOG_ENTRIES) catalog.clear();
        catalog.set(key, value);
      }
      return value;
    },
    async ping() {
      await db.query('SELECT 1');
    },
    dumpDataDir: () => exclusive(async () => (await call('dump')) as Uint8Array),
    async close() {
      if (closed) return;
      if (checkpointTimer) clearInterval(checkpointTimer);
      await exclusive(async () => {
        if (dataDir && syncOnCommit) await direct.exec('CHECKPOINT').catch(() => {});
        await call('close');
        if (dataDir && syncOnCommit) await fsyncTree(dataDir).catch(() => {});
      }).catch(() => {});
      closed = true;
      await worker.terminate();
    },
  };
  return db;
}
