// A real server process (embedded store, or TEST_DATABASE_URL) receiving SIGTERM under a load of
// batches: nothing acknowledged may be lost, and the process exits cleanly within its grace period.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { event } from './helpers/app.js';
import { startServer } from './helpers/server-process.js';

const ADMIN = 'shutdown-admin';

describe('graceful shutdown', () => {
  it('BAD-INPUTS 42: SIGTERM during a load of batches: in-flight requests finish or get 503, every acknowledged event is stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-sigterm-'));
    const env = { DATA_DIR: dir, ADMIN_TOKEN: ADMIN, DATABASE_URL: process.env.TEST_DATABASE_URL ?? '', SHUTDOWN_GRACE_MS: '10000' };
    try {
      let server = await startServer(env);
      const post = (path: string, key: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      type Created = { tenant: { id: string }; api_keys: { key: string; permissions: string[] }[] };
      const created = (await (await post('/admin/v1/tenants', ADMIN, { name: 'sigterm', plan: 'enterprise' })).json()) as Created;
      const admin = created.api_keys.find((k) => k.permissions.length === 4)!.key;
      await post('/v1/products', admin, { slug: 'app' });

      let acknowledged = 0;
      const statuses = new Map<string, number>();
      let stop = false;
      const sender = async () => {
        while (!stop) {
          try {
            const res = await post(
              '/v1/events',
              admin,
              Array.from({ length: 100 }, () => event()),
            );
            statuses.set(String(res.status), (statuses.get(String(res.status)) ?? 0) + 1);
            if (res.status === 200) acknowledged += ((await res.json()) as { accepted: number }).accepted;
            else await res.arrayBuffer();
            if (res.status === 503) assert.ok(Number(res.headers.get('retry-after')) >= 1);
          } catch {
            statuses.set('connection error', (statuses.get('connection error') ?? 0) + 1);
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      };
      const senders = Array.from({ length: 4 }, sender);
      await new Promise((r) => setTimeout(r, 1500));
      const started = Date.now();
      const code = await server.stop('SIGTERM');
      stop = true;
      await Promise.all(senders);
      assert.equal(code, 0, server.output());
      assert.ok(Date.now() - started < 10_000, 'exited within the grace period');
      assert.ok(acknowledged > 0, 'some batches were acknowledged before the signal');
      for (const s of statuses.keys()) assert.ok(['200', '503', 'connection error'].includes(s), `unexpected status ${s}`);

      server = await startServer(env);
      try {
        const tenant = (await (
          await fetch(`${server.url}/admin/v1/tenants/${created.tenant.id}`, { headers: { authorization: `Bearer ${ADMIN}` } })
        ).json()) as { usage: { events: number } };
        // Every acknowledged event is stored; at most the four batches in flight when the process
        // closed may have committed without their answer reaching the client.
        assert.ok(tenant.usage.events >= acknowledged, `stored ${tenant.usage.events} < acknowledged ${acknowledged}`);
        assert.ok(tenant.usage.events <= acknowledged + 400);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
