// The stores' handled failures reach the log openDb was given, instead of vanishing. Real stores
// (PGlite on a temporary folder; the PostgreSQL server at TEST_DATABASE_URL); the log is a list.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { StoreUnavailableError } from '../src/errors.js';
import { openDb, type StoreLog } from '../src/storage/db.js';
import { removeOnExit } from './helpers/on-exit.js';

function listLog(): StoreLog & { lines: { level: string; msg: string; err: unknown }[] } {
  const lines: { level: string; msg: string; err: unknown }[] = [];
  return {
    lines,
    warn: (obj, msg) => lines.push({ level: 'warn', msg, err: (obj as { err?: unknown }).err }),
    error: (obj, msg) => lines.push({ level: 'error', msg, err: (obj as { err?: unknown }).err }),
  };
}

describe('store logs', () => {
  it(
    'the embedded store logs a checkpoint that fails at close, and still closes',
    { skip: process.env.TEST_DATABASE_URL ? 'the embedded store is not in use' : false },
    async () => {
      const dir = removeOnExit(mkdtempSync(join(tmpdir(), 'tally-store-logs-')));
      const log = listLog();
      try {
        const db = await openDb({ dataDir: dir, syncOnCommit: true, log });
        await db.write('CREATE TABLE t (x int)');
        await db.write('INSERT INTO t SELECT generate_series(1, 100)');
        assert.equal(log.lines.length, 0);
        // The WAL's folder removed under the store: its last CHECKPOINT cannot write.
        rmSync(join(dir, 'pg', 'pg_wal'), { recursive: true, force: true });
        await db.close();
        assert.ok(log.lines.length > 0, 'the failed checkpoint is logged');
        assert.match(log.lines[0]!.msg, /checkpoint at close failed/);
        assert.ok(log.lines[0]!.err instanceof Error);
        await assert.rejects(db.query('SELECT 1'), StoreUnavailableError);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it(
    'PostgreSQL: an idle connection that the server ends is logged, and the next query gets another',
    { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' },
    async () => {
      const log = listLog();
      const db = await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 1, log });
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      try {
        const [row] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await admin.query('SELECT pg_terminate_backend($1)', [row!.pid]);
        for (let i = 0; i < 100 && log.lines.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
        assert.equal(log.lines.length, 1);
        assert.equal(log.lines[0]!.level, 'warn');
        assert.match(log.lines[0]!.msg, /idle request connection failed/);
        const [again] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        assert.notEqual(again!.pid, row!.pid);
      } finally {
        await admin.end();
        await db.close();
      }
    },
  );
});
