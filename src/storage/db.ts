import pino from 'pino';
import { attachCatalog } from './catalog.js';
import type { Db, Queryable, StoreLog } from './store.js';

// Opens a store: PGlite (the embedded store, storage/embedded/, default) or a PostgreSQL server
// (postgres.ts), both behind the Db interface (store.ts), with its catalog reads (catalog.ts).
export type { Db, LockedSession, Queryable, ScriptResult, ScriptStatement, StoreLog } from './store.js';

/** Advisory lock keys: one per background job, and one for migrations. */
export const LOCKS = {
  migrations: 7_100_001,
  productPurge: 7_100_002,
  sessionTimeouts: 7_100_003,
  rollups: 7_100_004,
  retention: 7_100_005,
  eventRetention: 7_100_030,
  actorErasures: 7_100_031,
  /** A transaction-level lock: each of the rollup job's steps and each erasure take it first (docs/data-rights.md). */
  readModelWrites: 7_100_032,
  /** The benchmarks' long statements: a job connection (no client-side query timeout), taken under a lock no job uses. */
  bench: 7_400_001,
} as const;

/**
 * Takes LOCKS.readModelWrites until the transaction ends: waits for the rollup job's step in flight and holds its next
 * one off, so a step that read rows before this transaction commits cannot write them back after it (docs/data-rights.md).
 */
export async function lockReadModelWrites(q: Queryable): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1)', [LOCKS.readModelWrites]);
}

export interface OpenOptions {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  /** PGlite only: fsync the WAL before a transaction resolves. */
  syncOnCommit?: boolean;
  poolSize?: number;
  /** PostgreSQL only: the request pool's statement timeout (15 s unless given; tests set a small one). */
  statementTimeoutMs?: number | undefined;
  /** Where the store's handled failures go: a pino logger at warn unless given. */
  log?: StoreLog;
}

let defaultLog: StoreLog | undefined;

/** Opens a store, with its catalog reads (catalog.ts: cached on the embedded store, read through on PostgreSQL). */
export async function openDb(opts: OpenOptions): Promise<Db> {
  const log = opts.log ?? (defaultLog ??= pino({ level: 'warn' }));
  if (opts.databaseUrl) {
    const { openPostgres } = await import('./postgres.js');
    return openPostgres(opts.databaseUrl, opts.poolSize ?? 8, log, opts.statementTimeoutMs);
  }
  const { openEmbedded } = await import('./embedded/index.js');
  // DATA_DIR holds the PostgreSQL data directory in pg/, beside our own files.
  const { db, catalog } = await openEmbedded({ dataDir: opts.dataDir ? `${opts.dataDir}/pg` : undefined, syncOnCommit: opts.syncOnCommit ?? true, log });
  return attachCatalog(db, catalog);
}
