import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from '../../errors.js';
import type { ScriptStatement } from '../script.mjs';
import type { StoreLog } from '../store.js';

// Messages to and from the worker thread that runs PGlite (worker.mjs). Each message carries an id;
// its answer resolves or rejects the promise waiting under that id. The worker runs what it was sent
// in order within its lanes (worker.mjs), so statements sent back to back are pipelined.

/**
 * What the worker runs: one statement (a look-up, a read of the read lane, a batch's write), several
 * without parameters (exec), a job's step as a script (script.mjs: one transaction), close, a dump.
 */
export type Op = 'query' | 'read' | 'write' | 'exec' | 'script' | 'close' | 'dump';

type Reply = { id: number; result?: unknown; error?: { message: string; code?: string; detail?: string }; catalogChanged?: boolean };

export interface Rpc {
  call(op: Op, sql?: string, params?: unknown[], statements?: ScriptStatement[]): Promise<unknown>;
  readonly closed: boolean;
  /** Stops the worker; whatever is still waiting fails as StoreUnavailableError. */
  terminate(): Promise<void>;
}

export interface RpcOptions {
  dataDir: string | undefined;
  syncOnCommit: boolean;
  /** PostgreSQL's shared_buffers in the worker. */
  sharedBuffersMb: number;
  /** Called before the answer to a statement (or COMMIT) that committed a change to the catalog resolves. */
  onCatalogChange: () => void;
  log: StoreLog;
}

/** Starts the worker and resolves once PGlite is open and listening for catalog changes. */
export async function startWorker(opts: RpcOptions): Promise<Rpc> {
  const worker = new Worker(new URL('./worker.mjs', import.meta.url), {
    workerData: { dataDir: opts.dataDir, syncOnCommit: opts.syncOnCommit, sharedBuffersMb: opts.sharedBuffersMb },
  });
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
    if (msg.catalogChanged) opts.onCatalogChange();
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code, detail: msg.error.detail }));
    else p.resolve(msg.result);
  });
  worker.on('error', (err) => {
    opts.log.error({ err }, 'embedded store: the PGlite worker failed; the store is unavailable');
    failAll(new StoreUnavailableError(err));
  });
  worker.on('exit', (code) => {
    if (!closed) opts.log.error({ code }, 'embedded store: the PGlite worker exited; the store is unavailable');
    failAll(new StoreUnavailableError());
  });
  await ready;

  return {
    call(op, sql, params, statements) {
      if (closed) return Promise.reject(new StoreUnavailableError());
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, op, sql, params, statements });
      });
    },
    get closed() {
      return closed;
    },
    async terminate() {
      closed = true;
      await worker.terminate();
    },
  };
}
