// The embedded store (PGlite) in a real server process, killed with SIGKILL right after it acknowledged
// a batch, then restarted on the same DATA_DIR. Nothing faked; skipped when the suite runs on PostgreSQL.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { event } from './helpers/app.js';
import { startServer } from './helpers/server-process.js';

const ADMIN = 'durability-admin';
const skip = process.env.TEST_DATABASE_URL ? 'the embedded store is not in use' : false;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- loose JSON bodies of our own API
async function json(url: string, init: RequestInit & { key?: string } = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${init.key ?? ADMIN}` } });
  return { status: res.status, body: await res.json() };
}

describe('embedded store durability', { skip }, () => {
  it('keeps every acknowledged event across a SIGKILL right after the acknowledgement', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-durable-'));
    try {
      const env = { DATA_DIR: dir, ADMIN_TOKEN: ADMIN };
      let server = await startServer(env);
      await server.printed('First start: created a demo tenant');
      const created = await json(`${server.url}/admin/v1/tenants`, { method: 'POST', body: JSON.stringify({ name: 'd', plan: 'enterprise' }) });
      const admin = created.body.api_keys.find((k: { permissions: string[] }) => k.permissions.length === 4).key;
      await json(`${server.url}/v1/products`, { method: 'POST', key: admin, body: JSON.stringify({ slug: 'app' }) });

      let acknowledged = 0;
      for (let i = 0; i < 5; i++) {
        const batch = Array.from({ length: 200 }, () => event());
        const res = await json(`${server.url}/v1/events`, { method: 'POST', key: admin, body: JSON.stringify(batch) });
        assert.equal(res.status, 200);
        acknowledged += res.body.accepted;
      }
      server.child.kill('SIGKILL'); // no shutdown, no checkpoint: what the OS page cache and the WAL hold
      await server.stop();

      server = await startServer(env);
      try {
        assert.doesNotMatch(server.output(), /First start/, 'the store was found, not created anew');
        const tenant = await json(`${server.url}/admin/v1/tenants/${created.body.tenant.id}`);
        assert.equal(tenant.body.usage.events, acknowledged);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("BAD-INPUTS 44: a crash after commit and before the response: the client's retry is deduplicated", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-retry-'));
    try {
      const env = { DATA_DIR: dir, ADMIN_TOKEN: ADMIN };
      let server = await startServer(env);
      const created = await json(`${server.url}/admin/v1/tenants`, { method: 'POST', body: JSON.stringify({ name: 'r', plan: 'enterprise' }) });
      const admin = created.body.api_keys.find((k: { permissions: string[] }) => k.permissions.length === 4).key;
      await json(`${server.url}/v1/products`, { method: 'POST', key: admin, body: JSON.stringify({ slug: 'app' }) });
      const batch = Array.from({ length: 500 }, () => event());
      // Send, and kill the server while the batch is being handled: the answer is lost either way,
      // whether or not the commit happened first.
      const lost = json(`${server.url}/v1/events`, { method: 'POST', key: admin, body: JSON.stringify(batch) }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 30));
      server.child.kill('SIGKILL');
      await server.stop();
      await lost;

      server = await startServer(env);
      try {
        const retry = await json(`${server.url}/v1/events`, { method: 'POST', key: admin, body: JSON.stringify(batch) });
        assert.equal(retry.status, 200);
        assert.equal(retry.body.accepted, 500);
        const again = await json(`${server.url}/v1/events`, { method: 'POST', key: admin, body: JSON.stringify(batch) });
        assert.ok(again.body.results.every((r: { duplicate?: boolean }) => r.duplicate === true));
        const tenant = await json(`${server.url}/admin/v1/tenants/${created.body.tenant.id}`);
        assert.equal(tenant.body.usage.events, 500, 'stored and counted once');
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to open a DATA_DIR that a live server owns', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-owned-'));
    const server = await startServer({ DATA_DIR: dir, ADMIN_TOKEN: ADMIN });
    try {
      await assert.rejects(startServer({ DATA_DIR: dir, ADMIN_TOKEN: ADMIN }, 20_000), /another Tally process/);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
