// One query interface over two drivers: PGlite (embedded, default) and pg (a PostgreSQL server).
// Query functions in this folder take a Queryable, so they run the same inside or outside a transaction.
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** A connection holding an advisory lock (background jobs): statements, and transactions on it. */
export interface LockedSession extends Queryable {
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /**
   * Runs fn in one transaction; it commits (and, on the embedded store, is made durable) before
   * resolving. Inside fn use only `q`: on the embedded store `db` itself waits for the transaction.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs one statement as its own transaction (no BEGIN/COMMIT round trips): committed, and on
   * the embedded store made durable, before it resolves. For writes that fit in one statement.
   */
  write<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Runs fn only if this process can take the advisory lock; returns undefined when another holds
   * it. fn's statements and transactions run on the connection holding the lock. On the embedded
   * store (one connection) each of them takes the connection in turn, so requests interleave
   * between a job's statements and transactions instead of waiting for the whole job.
   */
  tryWithLock<T>(key: number, fn: (s: LockedSession) => Promise<T>): Promise<T | undefined>;
  /** Runs fn holding the advisory lock, waiting for it. */
  withLock<T>(key: number, fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * A read of the catalog (tenants, API keys, products, versions) under `key`, served from memory
   * where that is exact. The embedded store caches it: one process owns that store, and every
   * change to those tables clears the cache before the change is acknowledged (migration 009). A
   * PostgreSQL server has other writers, so there `load` runs every time. The value is shared:
   * callers must not modify it. `cacheIf` says whether a value may be kept (an unknown key is not).
   */
  catalogRead<T>(key: string, load: () => Promise<T>, cacheIf?: (value: T) => boolean): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Embedded store only: a gzipped tar of its data directory, consistent (taken between two
   * statements, after a checkpoint) while the server keeps serving. A PostgreSQL server is backed
   * up with its own tools (pg_dump; docs/deploy.md).
   */
  dumpDataDir?(): Promise<Uint8Array>;
}

/** Advisory lock keys: one per background job, and one for migrations. */
export const LOCKS = {
  migrations: 7_100_001,
  productPurge: 7_100_002,
  sessionTimeouts: 7_100_003,
  rollups: 7_100_004,
  retention: 7_100_005,
  eventRetention: 7_100_030,
  actorErasures: 7_100_031,
} as const;

export interface OpenOptions {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  /** PGlite only: fsync the WAL before a transaction resolves. */
  syncOnCommit?: boolean;
  poolSize?: number;
}

export async function openDb(opts: OpenOptions): Promise<Db> {
  if (opts.databaseUrl) {
    const { openPostgres } = await import('./postgres.js');
    return openPostgres(opts.databaseUrl, opts.poolSize ?? 8);
  }
  const { openPglite } = await import('./pglite.js');
  // DATA_DIR holds the PostgreSQL data directory in pg/, beside our own files.
  return openPglite(opts.dataDir ? `${opts.dataDir}/pg` : undefined, opts.syncOnCommit ?? true);
}
