import { PGlite } from '@electric-sql/pglite';
import { mkdirSync, existsSync } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreUnavailableError } from '../errors.js';
import type { Db, Queryable } from './db.js';

// The embedded store. PGlite is PostgreSQL compiled to WebAssembly, running on this thread with
// fsync off: its writes reach the OS page cache as soon as a statement completes, so a killed
// process loses nothing committed, but an OS crash could lose what the kernel had not flushed.
// With syncOnCommit we close most of that gap ourselves: after every write transaction commits we
// fsync the WAL segments from Node's thread pool (one fsync pass shared by all commits waiting at
// that moment), and every few minutes we CHECKPOINT and fsync the whole data directory.
// See docs/embedded-store.md for what this does and does not promise.

async function fsyncFile(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function fsyncTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) await fsyncTree(p);
    else if (entry.isFile()) await fsyncFile(p).catch(() => {});
  }
  await fsyncFile(dir).catch(() => {});
}

/** Coalesces concurrent requests into as few fsync passes as possible (group commit). */
function groupSync(run: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  return () => {
    if (!running) {
      running = run().finally(() => (running = undefined));
      return running;
    }
    if (!next) {
      next = running.catch(() => {}).then(() => {
        next = undefined;
        running = run().finally(() => (running = undefined));
        return running;
      });
    }
    return next;
  };
}

export async function openPglite(dataDir: string | undefined, syncOnCommit: boolean): Promise<Db> {
  if (dataDir && !existsSync(dataDir)) mkdirSync(dataDir, { recursive: true });
  const pg = new PGlite({
    ...(dataDir ? { dataDir } : {}),
    parsers: { 20: (v: string) => Number(v) },
    // With fsync off, a checkpoint lets PostgreSQL recycle WAL whose pages may not be on disk yet.
    // So checkpoints are ours: rare on their own, and each of ours is followed by a full fsync pass.
    ...(dataDir && syncOnCommit ? { postgresqlconf: ['checkpoint_timeout = 1d', 'max_wal_size = 2GB'] } : {}),
  });
  await pg.waitReady;

  const walDir = dataDir ? join(dataDir, 'pg_wal') : undefined;
  const syncWal = walDir && syncOnCommit
    ? groupSync(async () => {
        const names = await readdir(walDir);
        await Promise.all(names.filter((n) => /^[0-9A-F]{24}$/.test(n)).map((n) => fsyncFile(join(walDir, n))));
        await fsyncFile(walDir);
      })
    : async () => {};

  let checkpointTimer: NodeJS.Timeout | undefined;
  if (dataDir && syncOnCommit) {
    checkpointTimer = setInterval(() => {
      void pg.exec('CHECKPOINT').then(() => fsyncTree(dataDir)).catch(() => {});
    }, 5 * 60_000);
    checkpointTimer.unref();
  }

  const query = async <T>(q: Pick<PGlite, 'query'>, sql: string, params?: unknown[]): Promise<T[]> => {
    if (pg.closed) throw new StoreUnavailableError();
    const res = await q.query<T>(sql, params as unknown[]);
    return res.rows;
  };

  const db: Db = {
    kind: 'pglite',
    query: (sql, params) => query(pg, sql, params),
    async exec(sql) {
      await pg.exec(sql);
    },
    async tx(fn) {
      const result = await pg.transaction((tx) =>
        fn({
          query: (sql, params) => query(tx, sql, params),
          exec: async (sql) => {
            await tx.exec(sql);
          },
        }),
      );
      await syncWal();
      return result;
    },
    // One process owns the embedded store, so its advisory locks are always free.
    async tryWithLock(_key, fn) {
      return fn(db);
    },
    async withLock(_key, fn) {
      return fn(db);
    },
    async ping() {
      await query(pg, 'SELECT 1');
    },
    async close() {
      if (checkpointTimer) clearInterval(checkpointTimer);
      if (dataDir && syncOnCommit) {
        await pg.exec('CHECKPOINT').catch(() => {});
        await fsyncTree(dataDir).catch(() => {});
      }
      await pg.close();
    },
  };
  return db;
}

export type { Queryable };
