import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { StatementTimeoutError, StoreUnavailableError } from '../errors.js';
import { CopyText, inlineParams } from './copy-text.js';
import { runScript } from './script.mjs';
import type { Db, LockedSession, Queryable, StoreLog } from './store.js';

// int8 (counts, sums) as JS numbers: our counters stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

/** Errors that mean "the store is not there right now", as opposed to a bad query. */
function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (!e) return false;
  if (typeof e.code === 'string') {
    if (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN)$/.test(e.code)) return true;
    // 08: connection exception, 57P0x: shutdown / cannot connect now, 57014: statement timeout, 53300: too many connections
    if (/^(08...|57P0.|57014|53300)$/.test(e.code)) return true;
  }
  return /timeout|Connection terminated|not queryable|Client has encountered a connection error|pool after calling end/i.test(e.message ?? '');
}

/** The server cancelled the statement at statement_timeout (not a cancel for another reason). */
function isStatementTimeout(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '57014' && /statement timeout/i.test(e.message ?? '');
}

function wrap(err: unknown): never {
  if (err instanceof StoreUnavailableError) throw err;
  if (isStatementTimeout(err)) throw new StatementTimeoutError(err);
  if (isUnavailable(err)) throw new StoreUnavailableError(err);
  throw err;
}

export function openPostgres(url: string, max: number, log: StoreLog, statementTimeoutMs = 15_000): Db {
  // JIT compilation costs more than it saves on our short statements.
  const options = '-c jit=off';
  const pool = new pg.Pool({
    connectionString: url,
    max,
    options,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    statement_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + 5000,
  });
  // Background jobs and migrations hold a lock on their own connections, with no client-side
  // query timeout: a large backlog may take minutes, and node-postgres would otherwise abandon the
  // statement while it still runs on the server, holding the lock.
  const jobPool = new pg.Pool({ connectionString: url, max: 2, options, connectionTimeoutMillis: 3000, idleTimeoutMillis: 30_000 });
  // Exports (copyText) on connections of their own: a COPY runs for as long as its client reads,
  // so it has neither the request pool's statement timeout nor its read timeout (CopyText's idle
  // timer stands for them), and however many exports run, requests keep their connections. Past
  // this many at once, the next waits as a request waits for a connection, then is a 503.
  const exportPool = new pg.Pool({
    connectionString: url,
    max: Math.max(2, Math.floor(max / 2)),
    options: `${options} -c statement_timeout=0`,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (server restart) must not crash the process: the pool
  // drops it and opens another when asked; the next query that cannot reach the server fails.
  const lost = (which: string) => (err: Error) => log.warn({ err }, `PostgreSQL: an idle ${which} connection failed; the pool replaces it`);
  jobPool.on('error', lost('background job'));
  exportPool.on('error', lost('export'));
  pool.on('error', lost('request'));

  const run = async <T>(client: pg.Pool | pg.PoolClient, sql: string, params?: unknown[]): Promise<T[]> => {
    try {
      const res = await client.query(sql, params as unknown[]);
      return res.rows as T[];
    } catch (err) {
      return wrap(err);
    }
  };

  const queryable = (client: pg.Pool | pg.PoolClient): Queryable => ({
    query: (sql, params) => run(client, sql, params),
    exec: async (sql) => {
      await run(client, sql);
    },
  });

  const connect = async (from: pg.Pool = pool): Promise<pg.PoolClient> => {
    try {
      return await from.connect();
    } catch (err) {
      return wrap(err);
    }
  };

  /** BEGIN … COMMIT on one client, rolled back on failure; `onBroken` hears when the client must not be reused. */
  const inTransaction = async <T>(client: pg.PoolClient, fn: (q: Queryable) => Promise<T>, onBroken: () => void = () => {}): Promise<T> => {
    const q = queryable(client);
    try {
      await q.query('BEGIN');
      const result = await fn(q);
      await q.query('COMMIT');
      return result;
    } catch (err) {
      if (err instanceof StoreUnavailableError) onBroken();
      else
        await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
          log.warn({ err: rollbackErr, cause: err }, 'PostgreSQL: ROLLBACK failed; the connection is closed');
          onBroken();
        });
      throw err;
    }
  };

  /** Runs fn on one connection holding a session advisory lock; undefined when `wait` is false and the lock is taken. */
  const holdingLock = async <T>(key: number, wait: boolean, fn: (s: LockedSession) => Promise<T>): Promise<T | undefined> => {
    const client = await connect(jobPool);
    const q: LockedSession = {
      ...queryable(client),
      tx: (body) => inTransaction(client, body),
      // The same statements, one round trip each: on this connection a round trip is cheap.
      async script(statements) {
        const began = performance.now();
        const rows = await inTransaction(client, (t) => runScript((sql, params) => t.query(sql, params), statements));
        return { rows, ms: performance.now() - began };
      },
    };
    let failed: Error | undefined;
    try {
      if (wait) await q.query('SELECT pg_advisory_lock($1)', [key]);
      else if (!(await q.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [key]))[0]?.ok) return undefined;
      try {
        return await fn(q);
      } finally {
        await q.query('SELECT pg_advisory_unlock($1)', [key]).catch((err: Error) => {
          log.warn({ err, key }, 'PostgreSQL: advisory unlock failed; the connection is closed, which releases the lock');
          failed = err;
        });
      }
    } catch (err) {
      failed = err as Error;
      throw err;
    } finally {
      // A connection whose statement or unlock failed is closed, never handed back holding the lock.
      client.release(failed);
    }
  };

  const db: Db = {
    kind: 'postgres',
    ...queryable(pool),
    async tx(fn) {
      const client = await connect();
      let broken = false;
      try {
        return await inTransaction(client, fn, () => (broken = true));
      } finally {
        client.release(broken);
      }
    },
    // A statement outside BEGIN is its own transaction, committed before the reply.
    write: (sql, params) => run(pool, sql, params),
    tryWithLock: (key, fn) => holdingLock(key, false, fn),
    withLock: async (key, fn) => (await holdingLock(key, true, fn))!,
    async copyText(sql, params, prefix) {
      const text = `COPY (${inlineParams(sql, params)}) TO STDOUT (FORMAT binary)`;
      const client = await connect(exportPool);
      const onError = (err: Error) => log.warn({ err }, 'PostgreSQL: an export connection failed');
      client.on('error', onError);
      let pid: number;
      try {
        pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      } catch (err) {
        client.release(err as Error);
        return wrap(err);
      }
      const source = client.query(copyTo(text));
      let [sourceEnded, sourceFailed] = [false, false];
      source.on('end', () => (sourceEnded = true));
      source.on('error', () => (sourceFailed = true));
      const out = new CopyText(source, {
        prefix,
        idleMs: statementTimeoutMs,
        onIdle: () => out.destroy(new StatementTimeoutError(new Error(`export: no row from the server in ${statementTimeoutMs} ms`))),
      });
      // Done, failed or abandoned (a client gone, the idle timer): a connection whose COPY did not
      // finish is closed, never handed back mid-COPY, and its statement cancelled (a backend busy
      // sorting would otherwise notice the closed socket only when it next writes).
      out.once('close', () => {
        if (sourceEnded) {
          client.removeListener('error', onError);
          client.release();
          return;
        }
        if (!sourceFailed)
          pool
            .query('SELECT pg_cancel_backend($1)', [pid])
            .catch((err: unknown) => log.warn({ err, pid }, 'PostgreSQL: cancelling an abandoned export failed'));
        client.release(new Error('export closed before its end'));
      });
      try {
        await out.ready;
      } catch (err) {
        return wrap(err);
      }
      return out;
    },
    async ping() {
      await run(pool, 'SELECT 1');
    },
    async close() {
      await Promise.all([pool.end(), jobPool.end(), exportPool.end()]);
    },
  };
  return db;
}
