// Rate limits over app.inject and, for the shared window, two real server processes sharing one
// PostgreSQL and one Redis (run when TEST_DATABASE_URL and TEST_REDIS_URL are set, as in CI).
// Plans are real configuration with a low rate; Redis "unreachable" is a real client on a dead port,
// and Redis "not answering" is the real Redis behind a TCP relay that can go silent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { mergePlans } from '../src/domain/plans.js';
import { event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';
import { startServer } from './helpers/server-process.js';
import { REDIS_ANSWER_TIMEOUT_MS, REDIS_PAUSE_MS } from '../src/http/plugins/rate-limit.js';

const plans = mergePlans({ trial: { requests_per_minute: 3 } });
let t: TestApp;
before(async () => (t = await startTestApp({ plans })));
after(async () => t.close());

const noRateLimitHeaders = (headers: Record<string, unknown>) => {
  for (const h of Object.keys(headers)) assert.ok(!/^x-ratelimit/i.test(h), `${h} must not be sent`);
};

/**
 * A TCP relay to the real Redis that can go silent as a partition or a stalled Redis does: connections
 * stay open (new ones are accepted too), and whatever either side sends (a FIN too) is held, not lost,
 * until the relay speaks again. `scripts` counts the rate limiter's commands that reached Redis.
 */
async function redisRelay(redisUrl: string) {
  const target = new URL(redisUrl);
  let silent = false;
  let held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const relay = {
    url: '',
    scripts: 0,
    silence: () => void (silent = true),
    speak() {
      silent = false;
      const actions = held;
      held = [];
      for (const act of actions) act();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    const closeBoth = () => (client.destroy(), upstream.destroy(), sockets.delete(client), sockets.delete(upstream));
    const unlessSilent = (act: () => void) => (silent ? held.push(act) : act());
    client.on('data', (d: Buffer) =>
      unlessSilent(() => {
        if (upstream.destroyed) return;
        if (/evalsha|eval/i.test(d.toString('latin1'))) relay.scripts++;
        upstream.write(d);
      }),
    );
    upstream.on('data', (d: Buffer) => unlessSilent(() => void (client.destroyed || client.write(d))));
    client.on('end', () => unlessSilent(closeBoth));
    for (const s of [client, upstream]) s.on('close', closeBoth).on('error', closeBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  relay.url = url.href;
  return relay;
}

/** The response, or a failed assertion if it takes longer than `ms` (a frozen Redis held requests until TCP gave up, minutes). */
async function promptly<T>(what: string, response: Promise<T>, ms = REDIS_ANSWER_TIMEOUT_MS + 18_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what}: no answer within ${ms} ms` })), ms)),
  );
  try {
    return await Promise.race([response, late]);
  } finally {
    clearTimeout(timer);
  }
}

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

  it(
    'BAD-INPUTS 39: a Redis that stops answering on an open connection holds no request: the per-process window decides (logged once), and the shared window again once Redis answers',
    { skip: process.env.TEST_REDIS_URL ? false : 'TEST_REDIS_URL not set' },
    async () => {
      // Two apps, each through its own relay to the same Redis; only the first relay goes silent.
      const [relayA, relayB] = [await redisRelay(process.env.TEST_REDIS_URL!), await redisRelay(process.env.TEST_REDIS_URL!)];
      const lines: string[] = [];
      const stream = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
      const a = await startTestApp({ db: t.db, plans, env: { REDIS_URL: relayA.url }, logger: { level: 'info', stream } });
      const b = await startTestApp({ db: t.db, plans, env: { REDIS_URL: relayB.url } });
      // One POST /v1/events; `viaRedis`: whether the limiter's command went through the app's relay to Redis.
      const post = async (app: TestApp, relay: { scripts: number }, key: string, what: string) => {
        const before = relay.scripts;
        const res = await promptly(what, postEvents(app.app, key, [event()]));
        return { status: res.statusCode, viaRedis: relay.scripts > before };
      };
      try {
        // A tenant whose first request went through Redis from both apps (a connection still in its
        // handshake is "not ready" and goes to the per-process window: retry with a fresh tenant).
        let tenant = await tenantWithProduct(a.app, 'trial');
        for (let attempt = 1; ; attempt++) {
          const first = await post(a, relayA, tenant.ingestKey, 'first request, app A');
          const second = await post(b, relayB, tenant.ingestKey, 'first request, app B');
          assert.deepEqual([first.status, second.status], [200, 200]);
          if (first.viaRedis && second.viaRedis) break;
          assert.ok(attempt < 50, 'the apps never reached Redis through the relays');
          await sleep(100);
          tenant = await tenantWithProduct(a.app, 'trial');
        }
        relayA.silence();
        const silentSince = Date.now();
        const silent: number[] = [];
        for (let i = 0; i < 4; i++) silent.push((await post(a, relayA, tenant.ingestKey, `request ${i + 1} with Redis silent`)).status);
        assert.deepEqual(silent, [200, 200, 200, 429], "app A's own window, fresh, decides");
        // Past the pause, Redis still silent: asked again, and still no request is held (promptly fails
        // the test otherwise). App A's own window still refuses, unless a loaded machine took so long
        // that its minute is over.
        await sleep(REDIS_PAUSE_MS + 2000);
        const afterPause = await post(a, relayA, tenant.ingestKey, 'a request after the pause, Redis still silent');
        if (Date.now() - silentSince < 60_000) assert.equal(afterPause.status, 429, "app A's own window still decides");
        const openings = lines.filter((l) => /Redis unreachable: no answer within/.test(l));
        assert.equal(openings.length, 1, 'the fallback is logged once');

        relayA.speak();
        // App A asks Redis again (the relay sees its command) once the pause is over. The held command of
        // the first silent request reaches Redis now and may count there too, so this tenant's shared
        // count is not known exactly: the shared window is checked with a fresh tenant.
        const deadline = Date.now() + 60_000;
        while (!(await post(a, relayA, tenant.ingestKey, 'a request once Redis answers')).viaRedis) {
          assert.ok(Date.now() < deadline, 'app A went back to Redis within 60 s of its answering again');
          await sleep(250);
        }
        const fresh = await tenantWithProduct(a.app, 'trial');
        const apps = [
          { app: a, relay: relayA },
          { app: b, relay: relayB },
        ];
        const shared = [];
        for (const { app, relay } of [...apps, ...apps]) shared.push(await post(app, relay, fresh.ingestKey, 'shared window'));
        assert.deepEqual(
          shared,
          [200, 200, 200, 429].map((status) => ({ status, viaRedis: true })),
          'the two apps share one window again',
        );
        assert.ok(
          lines.some((l) => /Redis answers again/.test(l)),
          'the return is logged',
        );
      } finally {
        await relayA.close();
        await relayB.close();
        await a.close();
        await b.close();
      }
    },
  );

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
