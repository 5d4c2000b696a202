import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Catalog } from '../catalog.js';
import { isReadLane } from '../read-lane.js';
import type { Db, Queryable, ScriptResult, StoreLog } from '../store.js';
import { createCatalogCache } from './cache.js';
import { createDurability, fsyncTree } from './durability.js';
import { startWorker } from './rpc.js';
import { createLanes, type Take } from './scheduling.js';

// The embedded store (docs/embedded-store.md): PGlite (PostgreSQL in WebAssembly) in its own worker
// thread (worker.mjs, reached through rpc.ts), so a query never blocks the HTTP event loop, and
// parsing and validating the next batch overlaps with writing this one. PGlite has one connection:
// single statements are pipelined to it, and a transaction takes it alone for its whole length
// (scheduling.ts). Writes are made durable before they resolve (durability.ts). Catalog reads are
// cached, exactly (cache.ts). This file puts them together behind the Db interface.

export interface EmbeddedOptions {
  /** PostgreSQL's data directory; in memory when undefined. */
  dataDir: string | undefined;
  /** fsync the WAL before a write resolves, and checkpoint with a full fsync every five minutes. */
  syncOnCommit: boolean;
  log: StoreLog;
}

/** PostgreSQL's shared buffers in the embedded store (its default, 128 MB, is resident once touched). */
const SHARED_BUFFERS_MB = 16;

/** A new data directory's initdb and migrations, in a process that ends with them (init.mjs says why). */
async function initialise(dataDir: string): Promise<void> {
  const script = fileURLToPath(new URL('./init.mjs', import.meta.url));
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [script, dataDir, String(SHARED_BUFFERS_MB)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`initialising the embedded store in ${dataDir} failed: ${err.trim().split('\n').pop() ?? code}`)),
    );
  });
}

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

export async function openEmbedded(opts: EmbeddedOptions): Promise<{ db: Db; catalog: Catalog }> {
  const { dataDir, log } = opts;
  if (dataDir && !existsSync(dataDir)) mkdirSync(dataDir, { recursive: true });
  if (dataDir && !existsSync(join(dataDir, 'PG_VERSION'))) {
    await initialise(dataDir);
    if (opts.syncOnCommit) await fsyncTree(dataDir, log);
  }
  const catalog = createCatalogCache();
  const rpc = await startWorker({ dataDir, syncOnCommit: opts.syncOnCommit, sharedBuffersMb: SHARED_BUFFERS_MB, onCatalogChange: catalog.changed, log });
  const lanes = createLanes();

  // Straight to the worker: for whoever already holds a turn.
  const direct: Queryable = {
    query: async <T>(sql: string, params?: unknown[]) => (await rpc.call('query', sql, params)) as T[],
    exec: async (sql: string) => {
      await rpc.call('exec', sql);
    },
  };
  const durability = createDurability({ dataDir, syncOnCommit: opts.syncOnCommit, exclusive: lanes.exclusive, exec: direct.exec, log });

  /** BEGIN … COMMIT as one turn on the connection (taken by `take`), then (when `durable`) the WAL to disk. */
  const inTransaction = async <T>(take: Take, fn: (q: Queryable) => Promise<T>, durable = true): Promise<T> => {
    const result = await take(async () => {
      await direct.exec('BEGIN');
      try {
        const r = await fn(direct);
        await direct.exec('COMMIT');
        return r;
      } catch (err) {
        // The error that ended the transaction is the one thrown; a failed ROLLBACK is logged beside it.
        await direct.exec('ROLLBACK').catch((rollbackErr: unknown) => log.warn({ err: rollbackErr, cause: err }, 'embedded store: ROLLBACK failed'));
        throw err;
      }
    });
    if (durable) await durability.syncWal();
    return result;
  };

  const db: Db = {
    kind: 'pglite',
    // A request in the read lane (a report, a funnel) sends its statements as 'read': behind batches' writes (worker.mjs).
    query: (sql, params) =>
      isReadLane() ? lanes.statement(async () => (await rpc.call('read', sql, params)) as never[]) : lanes.statement(() => direct.query(sql, params)),
    // A script may hold several statements, BEGIN and COMMIT among them: the connection alone.
    exec: (sql) => lanes.exclusive(() => direct.exec(sql)),
    tx: (fn) => inTransaction(lanes.exclusive, fn),
    async write<T>(sql: string, params?: unknown[]) {
      // The worker runs a batch's write after the short statements waiting, smaller writes first (worker.mjs).
      const rows = await lanes.statement(async () => (await rpc.call('write', sql, params)) as T[]);
      await durability.syncWal();
      return rows;
    },
    // One process owns the embedded store, so its advisory locks are always free. A job takes
    // the connection per statement or transaction, never for its whole run, and after the
    // requests waiting have had theirs, so that requests are served between its steps.
    tryWithLock: (_key, fn) =>
      fn({
        query: (sql, params) => lanes.jobStatement(() => direct.query(sql, params)),
        exec: (sql) => lanes.jobExclusive(() => direct.exec(sql)),
        // A derived transaction does not wait for the WAL's fsync (store.ts): waiting (100 to 400 ms
        // under load) left the rollup job a tenth of the connection at saturation.
        tx: (body, opts) => inTransaction(lanes.jobExclusive, body, !opts?.derived),
        // One message: the worker runs the whole transaction (worker.mjs), in the write lane,
        // where smaller messages (batches' writes) may pass it, at most MAX_PASSED of them (write-queue.mjs).
        async script(statements, opts) {
          const result = await lanes.jobScript(async () => (await rpc.call('script', undefined, undefined, statements)) as ScriptResult);
          if (!opts?.derived) await durability.syncWal();
          return result;
        },
      }),
    // Migrations: the whole run at once.
    withLock: (_key, fn) => lanes.exclusive(() => fn(direct)),
    async ping() {
      await db.query('SELECT 1');
    },
    dumpDataDir: () => lanes.exclusive(async () => (await rpc.call('dump')) as Uint8Array),
    async close() {
      if (rpc.closed) return;
      durability.stop();
      await lanes
        .exclusive(() => durability.close(direct.exec, () => rpc.call('close')))
        .catch((err: unknown) => log.error({ err }, 'embedded store: closing PGlite failed; the WAL is replayed at the next start'));
      await rpc.terminate();
    },
  };
  return { db, catalog };
}
