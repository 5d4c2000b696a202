// @ts-check
// The embedded store's thread: PGlite (PostgreSQL in WebAssembly) runs here, so that a query never
// blocks the HTTP event loop. Plain JavaScript because worker threads cannot load TypeScript
// through tsx on Node 20; it is type-checked through JSDoc. The main-thread side is pglite.ts.
import { parentPort, workerData } from 'node:worker_threads';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';

/** @type {{ dataDir?: string, syncOnCommit: boolean }} */
const { dataDir, syncOnCommit } = workerData;
if (!parentPort) throw new Error('pglite-worker must run as a worker thread');
const port = parentPort;

/** @param {string} path */
async function fsyncFile(path) {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** @param {string} dir */
async function fsyncTree(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) await fsyncTree(p);
    else if (entry.isFile()) await fsyncFile(p).catch(() => {});
  }
  await fsyncFile(dir).catch(() => {});
}

async function syncWal() {
  if (!dataDir) return;
  const walDir = join(dataDir, 'pg_wal');
  const names = await readdir(walDir);
  await Promise.all(names.filter((n) => /^[0-9A-F]{24}$/.test(n)).map((n) => fsyncFile(join(walDir, n))));
  await fsyncFile(walDir);
}

const pg = new PGlite({
  ...(dataDir ? { dataDir } : {}),
  parsers: { 20: (/** @type {string} */ v) => Number(v) },
  // With fsync off, a checkpoint lets PostgreSQL recycle WAL whose pages may not be on disk yet.
  // So checkpoints are ours: rare on their own, and each of ours is followed by a full fsync pass.
  ...(dataDir && syncOnCommit ? { postgresqlconf: ['checkpoint_timeout = 1d', 'max_wal_size = 2GB'] } : {}),
});

/**
 * @param {{ op: string, sql?: string, params?: unknown[] }} msg
 * @returns {Promise<unknown>}
 */
async function handle(msg) {
  switch (msg.op) {
    case 'query':
      return (await pg.query(/** @type {string} */ (msg.sql), msg.params)).rows;
    case 'exec':
      await pg.exec(/** @type {string} */ (msg.sql));
      return null;
    case 'sync':
      if (syncOnCommit) await syncWal();
      return null;
    case 'checkpoint':
      if (dataDir) {
        await pg.exec('CHECKPOINT');
        if (syncOnCommit) await fsyncTree(dataDir);
      }
      return null;
    case 'close':
      if (dataDir && syncOnCommit) {
        await pg.exec('CHECKPOINT').catch(() => {});
        await fsyncTree(dataDir).catch(() => {});
      }
      await pg.close();
      return null;
    default:
      throw new Error(`unknown op ${msg.op}`);
  }
}

port.on('message', (/** @type {{ id: number, op: string, sql?: string, params?: unknown[] }} */ msg) => {
  handle(msg).then(
    (result) => port.postMessage({ id: msg.id, result }),
    (/** @type {any} */ err) =>
      port.postMessage({ id: msg.id, error: { message: String(err?.message ?? err), code: err?.code, detail: err?.detail } }),
  );
});

pg.waitReady.then(
  () => port.postMessage({ id: 0, result: 'ready' }),
  (/** @type {any} */ err) => port.postMessage({ id: 0, error: { message: String(err?.message ?? err) } }),
);
