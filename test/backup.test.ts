// Backups, as an operator takes them: the real server process and CLI on the embedded store; on
// PostgreSQL (TEST_DATABASE_URL) the documented pg_dump / pg_restore round trip. Nothing faked.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { event } from './helpers/app.js';
import { startServer } from './helpers/server-process.js';

const run = promisify(execFile);
const ADMIN = 'backup-admin-token';
const cli = async (env: Record<string, string>, ...args: string[]) =>
  JSON.parse((await run('npx', ['tsx', 'src/cli/admin.ts', ...args], { env: { ...process.env, ...env } })).stdout);

async function api(url: string, path: string, key: string, body?: unknown) {
  const res = await fetch(url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { usage: { events: number } } };
}

describe('backup and restore: embedded store', { skip: process.env.TEST_DATABASE_URL ? 'the embedded store is not in use' : false }, () => {
  it('backup DIR while the server serves (events arriving), restore FILE into another folder, and the data reads back', async () => {
    const [dataDir, backupDir, restoredDir] = ['data', 'backups', 'restored'].map((n) => mkdtempSync(join(tmpdir(), `tally-${n}-`))) as [
      string,
      string,
      string,
    ];
    try {
      const env = { DATA_DIR: dataDir, DATABASE_URL: '', ADMIN_TOKEN: ADMIN };
      const server = await startServer(env);
      let acknowledged = 0;
      let tenantId = '';
      let stop = false;
      let sender: Promise<void> = Promise.resolve();
      try {
        const created = (await api(server.url, '/admin/v1/tenants', ADMIN, { name: 'backed-up', plan: 'business' })).body as unknown as {
          tenant: { id: string };
          api_keys: { key: string; permissions: string[] }[];
        };
        tenantId = created.tenant.id;
        const key = created.api_keys.find((k) => k.permissions.length === 4)!.key;
        assert.equal((await api(server.url, '/v1/products', key, { slug: 'app' })).status, 201);
        assert.equal(
          (
            await api(
              server.url,
              '/v1/events',
              key,
              Array.from({ length: 50 }, () => event()),
            )
          ).status,
          200,
        );
        acknowledged = 50;
        sender = (async () => {
          while (!stop)
            await api(
              server.url,
              '/v1/events',
              key,
              Array.from({ length: 20 }, () => event()),
            );
        })();
        // The CLI finds the running server through DATA_DIR: no --url.
        const out = await cli({ DATA_DIR: dataDir, DATABASE_URL: '', ADMIN_TOKEN: ADMIN }, 'backup', backupDir);
        assert.equal(out.from, server.url);
        assert.ok(out.bytes > 1000);
      } finally {
        stop = true;
        await sender;
        await server.stop();
      }
      const [file] = readdirSync(backupDir);
      assert.match(file!, /^tally-backup-.*\.tar\.gz$/);

      const restored = await cli({ DATA_DIR: restoredDir, DATABASE_URL: '' }, 'restore', join(backupDir, file!));
      assert.equal(restored.previous, null);
      const again = await startServer({ DATA_DIR: restoredDir, DATABASE_URL: '', ADMIN_TOKEN: ADMIN });
      try {
        const tenant = await api(again.url, `/admin/v1/tenants/${tenantId}`, ADMIN);
        assert.equal(tenant.status, 200);
        assert.ok(tenant.body.usage.events >= acknowledged, `restored ${tenant.body.usage.events} events, ${acknowledged} were stored before the backup`);
        assert.doesNotMatch(again.output(), /First start/, 'the restored store is found, not created anew');
      } finally {
        await again.stop();
      }

      // Restoring over an existing store moves it aside rather than deleting it.
      const over = await cli({ DATA_DIR: restoredDir, DATABASE_URL: '' }, 'restore', join(backupDir, file!));
      assert.ok(over.previous && existsSync(over.previous));
    } finally {
      for (const d of [dataDir, backupDir, restoredDir]) rmSync(d, { recursive: true, force: true });
    }
  });

  it('restore refuses while a server owns the folder', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tally-owned-'));
    const server = await startServer({ DATA_DIR: dataDir, DATABASE_URL: '', ADMIN_TOKEN: ADMIN });
    try {
      await assert.rejects(cli({ DATA_DIR: dataDir, DATABASE_URL: '' }, 'restore', '/nonexistent.tar.gz'), /owns .*stop it before restoring/);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe(
  'backup and restore: PostgreSQL (pg_dump, as docs/deploy.md says)',
  { skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL not set' },
  () => {
    it('pg_dump -Fc of the database, pg_restore into a new one, and the data reads back', async () => {
      const source = process.env.TEST_DATABASE_URL!;
      const server = await startServer({ DATABASE_URL: source, ADMIN_TOKEN: ADMIN });
      const dir = mkdtempSync(join(tmpdir(), 'tally-pgdump-'));
      const target = new URL(source);
      target.pathname = `/tally_restore_${process.pid}`;
      const admin = new pg.Client({ connectionString: source });
      await admin.connect();
      try {
        const created = (await api(server.url, '/admin/v1/tenants', ADMIN, { name: 'pg-backed-up', plan: 'business' })).body as unknown as {
          tenant: { id: string };
          api_keys: { key: string; permissions: string[] }[];
        };
        const key = created.api_keys.find((k) => k.permissions.length === 4)!.key;
        await api(server.url, '/v1/products', key, { slug: 'app' });
        assert.equal(
          (
            await api(
              server.url,
              '/v1/events',
              key,
              Array.from({ length: 30 }, () => event()),
            )
          ).status,
          200,
        );

        const dump = join(dir, 'tally.dump');
        await run('pg_dump', ['--format=custom', '--no-owner', `--file=${dump}`, source]);
        await admin.query(`CREATE DATABASE ${target.pathname.slice(1)}`);
        await run('pg_restore', ['--no-owner', `--dbname=${target.href}`, dump]);

        const restored = new pg.Client({ connectionString: target.href });
        await restored.connect();
        try {
          const { rows } = await restored.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [created.tenant.id]);
          assert.equal(rows[0].n, 30);
        } finally {
          await restored.end();
        }
      } finally {
        await server.stop();
        await admin.query(`DROP DATABASE IF EXISTS ${target.pathname.slice(1)} WITH (FORCE)`).catch(() => {});
        await admin.end();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
