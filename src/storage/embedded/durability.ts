import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoreLog } from '../store.js';
import type { Take } from './scheduling.js';

// PostgreSQL runs with fsync off in PGlite, but its writes reach the OS page cache as statements
// complete, so a killed process loses nothing committed. With syncOnCommit, every durable write is
// followed, before it resolves, by an fsync of the WAL (one pass shared by all commits waiting at
// that moment), and every five minutes we CHECKPOINT and fsync the whole data directory
// (docs/embedded-store.md). PostgreSQL's own checkpoints are made rare in worker.mjs.

const CHECKPOINT_EVERY_MS = 5 * 60_000;

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

/**
 * fsyncs every file of the data directory, and the folders (after our checkpoints). A file that
 * cannot be synced (removed meanwhile, a socket) does not stop the pass: it is logged and the pass
 * goes on, since the rest of the tree still has to reach the disk.
 */
export async function fsyncTree(dir: string, log: StoreLog): Promise<void> {
  const skip = (path: string) => (err: unknown) => log.warn({ err, path }, 'embedded store: fsync after a checkpoint skipped a file');
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await fsyncTree(path, log);
    else if (entry.isFile()) await fsyncFile(path).catch(skip(path));
  }
  await fsyncFile(dir).catch(skip(dir));
}

/**
 * Coalesces concurrent requests into as few runs as possible (group commit): a request made while
 * a run is on its way waits for the next run, which all such requests share. A run's failure
 * reaches the requests that waited for that run; the next run starts whatever the last one did.
 */
function groupSync(run: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = () => {
    running = run().finally(() => (running = undefined));
    return running;
  };
  const again = () => {
    next = undefined;
    return start();
  };
  return () => {
    if (!running) return start();
    next ??= running.then(again, again);
    return next;
  };
}

export interface Durability {
  /** Resolves once every write committed before the call is on disk (a no-op without syncOnCommit). */
  syncWal(): Promise<void>;
  /** Stops the checkpoint timer. */
  stop(): void;
  /**
   * Holding the connection (`exec` runs on it): a last CHECKPOINT, `closeStore`, and the tree to
   * disk. Only `closeStore`'s failure is thrown: the others are logged.
   */
  close(exec: (sql: string) => Promise<void>, closeStore: () => Promise<unknown>): Promise<void>;
}

export interface DurabilityOptions {
  dataDir: string | undefined;
  syncOnCommit: boolean;
  /** Takes the connection alone (a checkpoint holds it throughout). */
  exclusive: Take;
  exec: (sql: string) => Promise<void>;
  log: StoreLog;
}

export function createDurability(opts: DurabilityOptions): Durability {
  const { dataDir, log } = opts;
  if (!dataDir || !opts.syncOnCommit) return { syncWal: async () => {}, stop: () => {}, close: async (_exec, closeStore) => void (await closeStore()) };

  const syncWal = groupSync(() => syncWalFiles(join(dataDir, 'pg_wal')));
  // CHECKPOINT, then the whole folder to disk, with the connection held throughout. A failed one is
  // logged; the next one, five minutes later, covers what it did not.
  const checkpoint = () =>
    opts.exclusive(async () => {
      await opts.exec('CHECKPOINT');
      await fsyncTree(dataDir, log);
    });
  const timer = setInterval(
    () => void checkpoint().catch((err: unknown) => log.error({ err }, 'embedded store: the periodic checkpoint failed; the next one is in five minutes')),
    CHECKPOINT_EVERY_MS,
  );
  timer.unref();

  return {
    syncWal,
    stop: () => clearInterval(timer),
    async close(exec, closeStore) {
      await exec('CHECKPOINT').catch((err: unknown) =>
        log.error({ err }, 'embedded store: the checkpoint at close failed; the WAL is replayed at the next start'),
      );
      await closeStore();
      await fsyncTree(dataDir, log).catch((err: unknown) => log.error({ err }, 'embedded store: the fsync at close failed'));
    },
  };
}
