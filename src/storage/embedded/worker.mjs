// @ts-check
// The embedded store's thread: PGlite (PostgreSQL in WebAssembly) runs here, so that a query never
// blocks the HTTP event loop. Plain JavaScript because worker threads cannot load TypeScript
// through tsx on Node 20; it is type-checked through JSDoc. The main-thread side is rpc.ts.
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { runScript } from '../script.mjs';
import { createWriteQueue } from './write-queue.mjs';

/** @type {{ dataDir?: string, syncOnCommit: boolean, sharedBuffersMb: number }} */
const { dataDir, syncOnCommit, sharedBuffersMb } = workerData;
if (!parentPort) throw new Error('the embedded store worker must run as a worker thread');
const port = parentPort;

const pg = new PGlite({
  ...(dataDir ? { dataDir } : {}),
  parsers: { 20: (/** @type {string} */ v) => Number(v) },
  // With fsync off, a checkpoint lets PostgreSQL recycle WAL whose pages may not be on disk yet.
  // So checkpoints are ours: rare on their own, and each of ours is followed by a full fsync pass
  // (durability.ts, from the main thread).
  postgresqlconf: [
    // PostgreSQL's default is 128 MB, all of it resident once touched; the data files sit in the
    // OS page cache anyway (docs/benchmarks.md, "Embedded store memory").
    `shared_buffers = ${sharedBuffersMb}MB`,
    ...(dataDir && syncOnCommit ? ['checkpoint_timeout = 1d', 'max_wal_size = 2GB'] : []),
  ],
});

/**
 * @param {Message} msg
 * @returns {Promise<unknown>}
 */
async function handle(msg) {
  switch (msg.op) {
    case 'query':
    case 'read':
    case 'write':
      return (await pg.query(/** @type {string} */ (msg.sql), msg.params)).rows;
    case 'script': {
      // A background job's step, whole: BEGIN, its statements back to back, COMMIT (ROLLBACK on
      // an error, which is then the answer). Nothing else runs meanwhile: one message at a time.
      const began = performance.now();
      const rows = await pg.transaction((tx) =>
        runScript(async (sql, params) => (await tx.query(sql, params)).rows, /** @type {import('../script.mjs').ScriptStatement[]} */ (msg.statements)),
      );
      return { rows, ms: performance.now() - began };
    }
    case 'exec':
      await pg.exec(/** @type {string} */ (msg.sql));
      return null;
    case 'close':
      await pg.close();
      return null;
    case 'dump': {
      // A copy of the data directory between two statements (this thread runs one message at a
      // time): PostgreSQL's own files after a checkpoint, so a restore needs no recovery.
      await pg.exec('CHECKPOINT');
      const file = await pg.dumpDataDir('gzip');
      return new Uint8Array(await file.arrayBuffer());
    }
    default:
      throw new Error(`unknown op ${msg.op}`);
  }
}

// Messages run one at a time, in three lanes. A batch's write ('write', and a background job's
// step sent as one 'script') waits while any short statement is waiting, so that a request's
// look-ups (its key, its catalog) wait for at most the statement running, not for every batch
// queued ahead of them; but at most LOOKUPS_AHEAD of them pass a waiting write, so that a stream of
// them cannot starve ingestion. Among themselves, writes and scripts go smallest first, a small
// batch passing big ones and the job's steps, at most MAX_PASSED times each (write-queue.mjs). A
// read of the read lane ('read': a report, a funnel, the explorer; src/storage/read-lane.ts) may
// be long, so it waits behind both, and a write waits for at most the one read running; one read
// goes after every WRITES_AHEAD writes, so that saturating ingestion cannot starve the reads
// either. A transaction's statements come one at a time (index.ts sends the next only after the
// answer), so they never overtake each other.
/** @typedef {{ id: number, op: string, sql?: string, params?: unknown[], statements?: import('../script.mjs').ScriptStatement[] }} Message */
/** @type {Message[]} */
const first = [];
/** @type {ReturnType<typeof createWriteQueue<Message>>} */
const later = createWriteQueue();
/** @type {Message[]} */
const reads = [];
let running = false;
const LOOKUPS_AHEAD = 8;
const WRITES_AHEAD = 4;
let passed = 0;
let written = 0;

/** @returns {Message | undefined} */
function pick() {
  if (first.length > 0 && (later.length === 0 || passed < LOOKUPS_AHEAD)) {
    passed = later.length === 0 ? 0 : passed + 1;
    return first.shift();
  }
  passed = 0;
  if (later.length > 0 && (reads.length === 0 || written < WRITES_AHEAD)) {
    written = reads.length === 0 ? 0 : written + 1;
    return later.take();
  }
  written = 0;
  return reads.shift();
}

async function drain() {
  running = true;
  // A statement runs synchronously in WebAssembly: messages sent meanwhile wait in the port until
  // it ends. setImmediate lets them in, so that the next pick sees them in their lanes.
  for (let msg = pick(); msg; await new Promise(setImmediate), msg = pick()) {
    const m = msg;
    await handle(m).then(
      (result) => port.postMessage({ id: m.id, result, catalogChanged: takeCatalogChange() }),
      (/** @type {any} */ err) =>
        port.postMessage({
          id: m.id,
          error: { message: String(err?.message ?? err), code: err?.code, detail: err?.detail },
          catalogChanged: takeCatalogChange(),
        }),
    );
  }
  running = false;
}

port.on('message', (/** @type {Message} */ msg) => {
  if (msg.op === 'write' || msg.op === 'script') later.push(msg);
  else (msg.op === 'read' ? reads : first).push(msg);
  if (!running) void drain();
});

// Migration 009's notices: the statement just run changed the catalog (tenants, keys, products,
// versions). PGlite hands a notice to its listener while it reads the statement's answer, before
// that answer resolves, so the flag rides on the answer to the very statement (or COMMIT) that
// committed the change, and cache.ts drops its cached reads before anyone sees the change acknowledged.
let catalogChanged = false;
const takeCatalogChange = () => {
  const changed = catalogChanged;
  catalogChanged = false;
  return changed;
};

pg.waitReady
  .then(() => pg.listen('tally_catalog', () => void (catalogChanged = true)))
  .then(
    () => port.postMessage({ id: 0, result: 'ready' }),
    (/** @type {any} */ err) => port.postMessage({ id: 0, error: { message: String(err?.message ?? err) } }),
  );
