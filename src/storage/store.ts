// What a store is: one query interface over two drivers, PGlite (the embedded store, default) and
// pg (a PostgreSQL server). Query functions in this folder take a Queryable, so they run the same
// inside or outside a transaction. Opening one is db.ts's job; the drivers import only this file,
// so that nothing imports back the module that opens them.
import type { Readable } from 'node:stream';
import type { ScriptStatement } from './script.mjs';

export type { ScriptStatement } from './script.mjs';

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** A connection holding an advisory lock (background jobs): statements, and transactions on it. */
export interface LockedSession extends Queryable {
  /**
   * Runs fn in one transaction. `derived`: it writes only what can be computed again from other
   * rows (the read model, with its horizon in the same transaction), so the embedded store resolves
   * it without waiting for the WAL's fsync (the next durable write or checkpoint takes it to disk,
   * in WAL order: a crash loses whole transactions, never part of one). PostgreSQL ignores it.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>, opts?: { derived?: boolean }): Promise<T>;
  /**
   * Runs a script (script.mjs) in one transaction, as `tx` does (`derived` alike), and resolves to
   * its named statements' rows and `ms`, the time from its BEGIN to its COMMIT's answer in the
   * store. On the embedded store it is one message to the worker thread, run there whole: no round
   * trip to this thread between its statements, and no wait for the connection between them either.
   */
  script(statements: ScriptStatement[], opts?: { derived?: boolean }): Promise<ScriptResult>;
}

/** What a script answers: the rows of its named statements, and how long it held the store. */
export interface ScriptResult {
  rows: Record<string, Record<string, unknown>[]>;
  ms: number;
}

/**
 * A store: the embedded one (storage/embedded/, PGlite) or a PostgreSQL server (postgres.ts). The
 * same contract on both; where they differ in cost, the comment says which way to lean.
 */
export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /**
   * Runs fn in one transaction; it commits, and is durable, before resolving. Inside fn use only
   * `q`: a store may have one connection (the embedded store does), and `db` then waits for fn.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs one statement that changes data as its own transaction, with no BEGIN/COMMIT round trips:
   * committed and durable before it resolves. A statement through `query` is committed when it
   * resolves but, on the embedded store, made durable only by the next `write`, `tx` or checkpoint;
   * `write` may also run after shorter statements waiting (a batch's write after look-ups).
   */
  write<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Runs fn only if this process can take the advisory lock; returns undefined when another holds
   * it. fn's statements and transactions run holding the lock; a store may serve other work between
   * them (the embedded store does, so that requests do not wait for a whole job).
   */
  tryWithLock<T>(key: number, fn: (s: LockedSession) => Promise<T>): Promise<T | undefined>;
  /** Runs fn holding the advisory lock, waiting for it. */
  withLock<T>(key: number, fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Embedded store only: a gzipped tar of its data directory, consistent (taken between two
   * statements, after a checkpoint) while the server keeps serving. A PostgreSQL server is backed
   * up with its own tools (pg_dump; docs/deploy.md).
   */
  dumpDataDir?(): Promise<Uint8Array>;
  /**
   * PostgreSQL only: the text values of a one-column query, every row, as one byte stream of
   * the values back to back (COPY … TO STDOUT; nothing escaped, no separator added), on a
   * connection of its own held until the stream ends, fails or is destroyed. Resolves once the
   * first bytes (or the end) have come, so that a failure before them, a statement timeout
   * included, is still an error thrown here. The server's statement timeout does not apply to
   * the whole (it runs as long as its reader reads); the stream fails instead when its reader
   * waits on the server that long. `prefix` goes out before the first value.
   */
  copyText?(sql: string, params: unknown[], prefix?: Buffer): Promise<Readable>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Where a store reports the failures it handles without throwing them to a caller: a background
 * checkpoint, a ROLLBACK after the error it answers, an idle connection lost. pino's and Fastify's
 * loggers fit.
 */
export interface StoreLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
