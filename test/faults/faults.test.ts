// Faults against real server processes sharing one real PostgreSQL (TEST_DATABASE_URL) and Redis
// (TEST_REDIS_URL): the server is stopped and restarted, processes are doubled, responses are lost.
// Every scenario asserts counts in the database, not logs. Run by `npm run test:faults` (CI).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { event } from '../helpers/app.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { openDb, type Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';

const DATABASE_URL = process.env.TEST_DATABASE_URL;
const REDIS_URL = process.env.TEST_REDIS_URL;
const skip = DATABASE_URL && REDIS_URL ? false : 'needs TEST_DATABASE_URL and TEST_REDIS_URL';
const ADMIN = 'faults-admin';

let db: Db;
before(async () => {
  if (skip) return;
  db = await openDb({ databaseUrl: DATABASE_URL, poolSize: 2 });
  await migrate(db);
});
after(async () => db?.close());

type Created = { tenant: { id: string }; api_keys: { key: string; permissions: string[] }[] };
async function post(url: string, key: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}
async function setupTenant(server: ServerProcess, plan = 'enterprise'): Promise<{ id: string; key: string }> {
  const created = (await (await post(`${server.url}/admin/v1/tenants`, ADMIN, { name: 'faults', plan })).json()) as Created;
  const key = created.api_keys.find((k) => k.permissions.length === 4)!.key;
  await (await post(`${server.url}/v1/products`, key, { slug: 'app' })).arrayBuffer();
  return { id: created.tenant.id, key };
}
async function storedIds(tenantId: string): Promise<Set<string>> {
  const rows = await db.query<{ event_id: string }>('SELECT event_id FROM events WHERE tenant_id = $1', [tenantId]);
  return new Set(rows.map((r) => r.event_id));
}
const serverEnv = (extra: Record<string, string> = {}) => ({ DATABASE_URL: DATABASE_URL!, REDIS_URL: REDIS_URL!, ADMIN_TOKEN: ADMIN, ...extra });

function pgctl(action: 'stop' | 'start'): void {
  const version = readdirSync('/etc/postgresql')[0]!;
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', action, ...(action === 'stop' ? ['-m', 'fast'] : [])], { stdio: 'ignore' });
}

describe('faults', { skip }, () => {
  it('BAD-INPUTS 41: PostgreSQL stopped and restarted under load: every acknowledged event is stored, the rest got 503 or an error, and the server recovers by itself', async () => {
    const server = await startServer(serverEnv());
    try {
      const tenant = await setupTenant(server);
      const acknowledged = new Set<string>();
      const outcomes = new Map<string, number>();
      const note = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
      let stop = false;
      const sender = async () => {
        while (!stop) {
          const batch = Array.from({ length: 50 }, () => event());
          try {
            const res = await post(`${server.url}/v1/events`, tenant.key, batch);
            note(String(res.status));
            if (res.status === 200 || res.status === 207) {
              const body = (await res.json()) as { results: { status: string; event_id: string }[] };
              for (const r of body.results) if (r.status === 'accepted') acknowledged.add(r.event_id);
            } else {
              assert.equal(res.status, 503, `unexpected ${res.status}`);
              assert.ok(Number(res.headers.get('retry-after')) >= 1);
              await res.arrayBuffer();
              await new Promise((r) => setTimeout(r, 100));
            }
          } catch {
            note('error');
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      };
      const senders = Array.from({ length: 3 }, sender);
      await new Promise((r) => setTimeout(r, 1500));
      pgctl('stop');
      try {
        await new Promise((r) => setTimeout(r, 3000));
      } finally {
        pgctl('start');
      }
      // Recovered without a restart: a fresh batch is accepted within a few seconds.
      let recovered = false;
      for (let i = 0; i < 40 && !recovered; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const res = await post(`${server.url}/v1/events`, tenant.key, [event()]).catch(() => undefined);
        recovered = res?.status === 200;
        await res?.arrayBuffer();
      }
      stop = true;
      await Promise.all(senders);
      assert.ok(recovered, 'the server accepts again after PostgreSQL is back');
      assert.ok((outcomes.get('503') ?? 0) + (outcomes.get('error') ?? 0) > 0, `the outage was seen: ${JSON.stringify([...outcomes])}`);
      const stored = await storedIds(tenant.id);
      const lost = [...acknowledged].filter((id) => !stored.has(id));
      assert.equal(lost.length, 0, `${lost.length} acknowledged events are missing`);
    } finally {
      await server.stop();
    }
  });

  it('two server processes: the allotment holds across both, and background jobs fold each row once', async () => {
    const dir = (await import('node:fs')).mkdtempSync('/tmp/tally-faults-');
    const plansFile = `${dir}/plans.json`;
    (await import('node:fs')).writeFileSync(plansFile, JSON.stringify({ starter: { monthly_events: 100, requests_per_minute: 10_000 } }));
    const env = serverEnv({ PLANS_FILE: plansFile, QUOTA_GRACE_HOURS: '0', ROLLUP_INTERVAL_SECONDS: '1' });
    const [a, b] = await Promise.all([startServer(env), startServer(env)]);
    try {
      const capped = await setupTenant(a, 'starter');
      // 150 events through both processes: the cap (100, no grace) is reached and then holds on both.
      const codes: number[] = [];
      for (let i = 0; i < 15; i++) {
        const res = await post(
          `${(i % 2 ? a : b).url}/v1/events`,
          capped.key,
          Array.from({ length: 10 }, () => event()),
        );
        codes.push(res.status);
        await res.arrayBuffer();
      }
      assert.deepEqual(codes.slice(0, 10), Array(10).fill(200));
      assert.ok(
        codes.slice(10).every((c) => c === 402),
        codes.join(','),
      );
      assert.equal((await storedIds(capped.id)).size, 100);

      // Rollups: both processes run the job every second; each row must be folded once.
      const tenant = await setupTenant(b, 'enterprise');
      const now = new Date().toISOString();
      for (const server of [a, b, a, b]) {
        const res = await post(
          `${server.url}/v1/events`,
          tenant.key,
          Array.from({ length: 25 }, () => event({ account_id: 'acme', timestamp: now })),
        );
        await res.arrayBuffer();
      }
      let events = 0;
      for (let i = 0; i < 40 && events < 100; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const res = await fetch(`${a.url}/v1/accounts/acme`, { headers: { authorization: `Bearer ${tenant.key}` } });
        if (res.ok) events = ((await res.json()) as { counts: { events: number } }).counts.events;
        else await res.arrayBuffer();
      }
      await new Promise((r) => setTimeout(r, 2500)); // a few more runs on both processes
      const res = await fetch(`${b.url}/v1/accounts/acme`, { headers: { authorization: `Bearer ${tenant.key}` } });
      assert.equal(((await res.json()) as { counts: { events: number } }).counts.events, 100, 'folded exactly once');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
    }
  });

  it('BAD-INPUTS 44: a client that retries every batch after a lost response: each event is stored once', async () => {
    const server = await startServer(serverEnv());
    try {
      const tenant = await setupTenant(server);
      const sent = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const batch = Array.from({ length: 100 }, () => event());
        for (const e of batch) sent.add(e.event_id as string);
        // First attempt: the client gives up on the answer (lost response), then retries until acknowledged.
        const ctrl = new AbortController();
        const first = post(`${server.url}/v1/events`, tenant.key, batch, ctrl.signal).catch(() => undefined);
        setTimeout(() => ctrl.abort(), i % 4);
        await first;
        for (;;) {
          const res = await post(`${server.url}/v1/events`, tenant.key, batch);
          const body = (await res.json()) as { accepted: number };
          if (res.status === 200) {
            assert.equal(body.accepted, 100);
            break;
          }
        }
      }
      const stored = await storedIds(tenant.id);
      assert.equal(stored.size, sent.size);
      const tenantRes = await fetch(`${server.url}/admin/v1/tenants/${tenant.id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(((await tenantRes.json()) as { usage: { events: number } }).usage.events, sent.size, 'counted once');
    } finally {
      await server.stop();
    }
  });
});
