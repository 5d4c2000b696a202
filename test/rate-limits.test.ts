// Rate limits over app.inject and, for the shared window, two real server processes sharing one
// PostgreSQL and one Redis (run when TEST_DATABASE_URL and TEST_REDIS_URL are set, as in CI).
// Plans are real configuration with a low rate; Redis "unreachable" is a real client on a dead port.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { mergePlans } from '../src/domain/plans.js';
import { event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';
import { startServer } from './helpers/server-process.js';

const plans = mergePlans({ trial: { requests_per_minute: 3 } });
let t: TestApp;
before(async () => (t = await startTestApp({ plans })));
after(async () => t.close());

const noRateLimitHeaders = (headers: Record<string, unknown>) => {
  for (const h of Object.keys(headers)) assert.ok(!/^x-ratelimit/i.test(h), `${h} must not be sent`);
};

describe('rate limits', () => {
  it('BAD-INPUTS 37: the (limit+1)th POST /v1/events in a minute is 429 with an integer Retry-After ≥ 1 and no X-RateLimit-* header; another tenant is unaffected', async () => {
    const a = await tenantWithProduct(t.app, 'trial');
    const b = await tenantWithProduct(t.app, 'trial');
    for (let i = 0; i < 3; i++) {
      const ok = await postEvents(t.app, a.ingestKey, [event()]);
      assert.equal(ok.statusCode, 200);
      noRateLimitHeaders(ok.headers);
    }
    const limited = await postEvents(t.app, a.ingestKey, [event()]);
    assert.equal(limited.statusCode, 429);
    assert.match(String(limited.headers['retry-after']), /^[1-9]\d*$/);
    assert.ok(Number(limited.headers['retry-after']) <= 60);
    assert.equal(limited.json().code, 'rate_limited');
    assert.match(String(limited.headers['content-type']), /^application\/problem\+json/);
    noRateLimitHeaders(limited.headers);
    assert.equal((await postEvents(t.app, b.ingestKey, [event()])).statusCode, 200);
  });

  it('BAD-INPUTS 38: sessions and exceptions are never rate-limited', async () => {
    const tenant = await tenantWithProduct(t.app, 'trial');
    const headers = { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json' };
    for (let i = 0; i < 10; i++) {
      const s = await t.app.inject({
        method: 'POST',
        url: '/v1/events/sessions',
        headers,
        payload: { session_id: `s-${i}`, actor_id: 'a', product: 'app', product_version: '1', started_at: '2026-01-01T00:00:00Z' },
      });
      assert.equal(s.statusCode, 200);
      const e = await t.app.inject({
        method: 'POST',
        url: '/v1/events/exceptions',
        headers,
        payload: {
          exception_id: `e-${i}`,
          exception_type: 'E',
          severity: 'non_fatal',
          occurred_at: '2026-01-01T00:00:00Z',
          actor_id: 'a',
          product: 'app',
          product_version: '1',
        },
      });
      assert.equal(e.statusCode, 200);
    }
  });

  it('BAD-INPUTS 39: with Redis unreachable the limit fails open to a per-process window, and says so in the log', async () => {
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
    const app = await startTestApp({ db: t.db, plans, env: { REDIS_URL: 'redis://127.0.0.1:1' }, logger: { level: 'warn', stream } });
    try {
      const tenant = await tenantWithProduct(app.app, 'trial');
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) codes.push((await postEvents(app.app, tenant.ingestKey, [event()])).statusCode);
      assert.deepEqual(codes, [200, 200, 200, 429], 'still limited, per process');
      assert.ok(
        lines.some((l) => /Redis unreachable/.test(l)),
        'the fallback is logged',
      );
    } finally {
      await app.close();
    }
  });

  it('with Redis, two apps share one window', { skip: process.env.TEST_REDIS_URL ? false : 'TEST_REDIS_URL not set' }, async () => {
    const env = { REDIS_URL: process.env.TEST_REDIS_URL! };
    const one = await startTestApp({ db: t.db, plans, env });
    const two = await startTestApp({ db: t.db, plans, env });
    try {
      const tenant = await tenantWithProduct(one.app, 'trial');
      const codes = [];
      for (const app of [one, two, one, two]) codes.push((await postEvents(app.app, tenant.ingestKey, [event()])).statusCode);
      assert.deepEqual(codes, [200, 200, 200, 429]);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it(
    'BAD-INPUTS 37: the limit holds across two server processes sharing PostgreSQL and Redis',
    { skip: process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL ? false : 'needs TEST_DATABASE_URL and TEST_REDIS_URL' },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tally-rl-'));
      const plansFile = join(dir, 'plans.json');
      writeFileSync(plansFile, JSON.stringify({ trial: { requests_per_minute: 10 } }));
      const env = { DATABASE_URL: process.env.TEST_DATABASE_URL!, REDIS_URL: process.env.TEST_REDIS_URL!, ADMIN_TOKEN: 'rl-admin', PLANS_FILE: plansFile };
      const [a, b] = await Promise.all([startServer(env), startServer(env)]);
      try {
        const post = (url: string, path: string, key: string, body: unknown) =>
          fetch(`${url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        const created = (await (await post(a.url, '/admin/v1/tenants', 'rl-admin', { name: 'rl', plan: 'trial' })).json()) as {
          api_keys: { key: string; permissions: string[] }[];
        };
        const key = created.api_keys.find((k) => k.permissions.length === 4)!.key;
        await post(b.url, '/v1/products', key, { slug: 'app' });
        const codes: number[] = [];
        for (let i = 0; i < 12; i++) {
          const res = await post(i % 2 === 0 ? a.url : b.url, '/v1/events', key, [event()]);
          await res.arrayBuffer();
          codes.push(res.status);
        }
        assert.deepEqual(codes, [...Array(10).fill(200), 429, 429]);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
