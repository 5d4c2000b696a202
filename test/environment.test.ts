// X-Environment-Data, exceptions' environment_context and request races over app.inject against a real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); the rollup job runs once for real; only plans and one app's clock are set by hand.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { v7 as uuidv7 } from 'uuid';
import { mergePlans } from '../src/domain/plans.js';
import { countStored, event, foldReadModel, get, post, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const ENV = { os: 'Windows 11 23H2', runtime: '.NET 8.0.1', browser: null, screen: { width: 2560, height: 1440 }, locale: 'de-DE' };
// Sessions start an hour ago: a server sharing the database times out sessions on the real clock.
const HOUR = 3_600_000;
const STARTED = new Date(Math.floor(Date.now() / 1000) * 1000 - HOUR).toISOString();
const at = (offsetMs: number) => new Date(Date.parse(STARTED) + offsetMs).toISOString();
const header = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

async function environments(tenantId: string): Promise<{ actor_id: string; session_id: string; data: unknown }[]> {
  return t.db.query('SELECT actor_id, session_id, data FROM environments WHERE tenant_id = $1 ORDER BY actor_id, session_id', [tenantId]);
}

function sessionStart(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { session_id: uuidv7(), actor_id: 'actor-1', product: 'app', product_version: '1.0.0', started_at: STARTED, ...overrides };
}

function exception(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    exception_id: uuidv7(),
    exception_type: 'TypeError',
    severity: 'fatal',
    occurred_at: at(5 * 60_000),
    actor_id: 'actor-1',
    product: 'app',
    product_version: '1.0.0',
    ...overrides,
  };
}

describe('X-Environment-Data (CONTRACT.md "Sessions and exceptions", "Browser clients")', () => {
  it('on POST /v1/events: stored against the actor and the session of the request', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const res = await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'actor-1', session_id: sessionId }), event({ actor_id: 'actor-2' })], {
      headers: { 'x-environment-data': header(ENV) },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(await environments(tenant.id), [
      { actor_id: 'actor-1', session_id: sessionId, data: ENV },
      { actor_id: 'actor-2', session_id: '', data: ENV },
    ]);
  });

  it("on POST /v1/events/sessions: stored against the session's actor and session", async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart({ actor_id: 'actor-7' });
    const res = await post(t.app, tenant.ingestKey, '/v1/events/sessions', s, { 'x-environment-data': header(ENV) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(await environments(tenant.id), [{ actor_id: 'actor-7', session_id: s.session_id, data: ENV }]);
  });

  it("on POST /v1/events/exceptions: stored against the exception's actor and session", async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const res = await post(t.app, tenant.ingestKey, '/v1/events/exceptions', exception({ actor_id: 'actor-8', session_id: sessionId }), {
      'x-environment-data': header(ENV),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(await environments(tenant.id), [{ actor_id: 'actor-8', session_id: sessionId, data: ENV }]);
  });

  it('a later header replaces the environment of the same actor and session', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event()], { headers: { 'x-environment-data': header(ENV) } });
    const newer = { ...ENV, os: 'Windows 11 24H2' };
    await postEvents(t.app, tenant.ingestKey, [event()], { headers: { 'x-environment-data': header(newer) } });
    assert.deepEqual(await environments(tenant.id), [{ actor_id: 'actor-1', session_id: '', data: newer }]);
  });

  it('a malformed header is ignored and the request still succeeds', async () => {
    const tenant = await tenantWithProduct(t.app);
    const malformed: [string, string][] = [
      ['not base64', '%%% not base64 %%%'],
      ['raw JSON, not encoded', JSON.stringify(ENV)],
      ['base64 of non-JSON', Buffer.from('os=linux; locale=fr').toString('base64')],
      ['base64 of truncated JSON', Buffer.from('{"os":"lin').toString('base64')],
      ['base64 of a JSON array', header([ENV])],
      ['base64 of a JSON string', header('linux')],
      ['base64 of null', header(null)],
      ['base64 of a __proto__ key', Buffer.from('{"__proto__":{"polluted":true}}').toString('base64')],
      ['huge', header({ blob: 'x'.repeat(200_000) })],
    ];
    for (const [what, value] of malformed) {
      const res = await postEvents(t.app, tenant.ingestKey, [event()], { headers: { 'x-environment-data': value } });
      assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
      const s = await post(t.app, tenant.ingestKey, '/v1/events/sessions', sessionStart(), { 'x-environment-data': value });
      assert.equal(s.statusCode, 200, `${what} on a session start: ${s.body}`);
      const e = await post(t.app, tenant.ingestKey, '/v1/events/exceptions', exception(), { 'x-environment-data': value });
      assert.equal(e.statusCode, 200, `${what} on an exception: ${e.body}`);
    }
    assert.equal(await countStored(t.db, tenant.id), malformed.length);
    assert.deepEqual(await environments(tenant.id), []);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('is kept even when the request is answered 429', async () => {
    const limited = await startTestApp({ db: t.db, plans: mergePlans({ trial: { requests_per_minute: 1 } }) });
    try {
      const tenant = await tenantWithProduct(limited.app, 'trial');
      assert.equal((await postEvents(limited.app, tenant.ingestKey, [event()])).statusCode, 200, 'uses the minute');
      const sessionId = uuidv7();
      const res = await postEvents(limited.app, tenant.ingestKey, [event({ actor_id: 'actor-9', session_id: sessionId })], {
        headers: { 'x-environment-data': header(ENV) },
      });
      assert.equal(res.statusCode, 429, res.body);
      assert.equal(res.json().code, 'rate_limited');
      assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
      assert.deepEqual(await environments(tenant.id), [{ actor_id: 'actor-9', session_id: sessionId, data: ENV }]);
      assert.equal(await countStored(t.db, tenant.id), 1, 'the refused event itself is not stored');
    } finally {
      await limited.close();
    }
  });

  it('is kept even when the request is answered 402 (trial expired)', async () => {
    const tenant = await tenantWithProduct(t.app, 'trial');
    const later = await startTestApp({ db: t.db, now: () => new Date(Date.now() + 22 * 86_400_000) });
    try {
      const res = await postEvents(later.app, tenant.ingestKey, [event({ actor_id: 'actor-3' })], { headers: { 'x-environment-data': header(ENV) } });
      assert.equal(res.statusCode, 402, res.body);
      assert.equal(res.json().code, 'billing_blocked');
      assert.deepEqual(await environments(tenant.id), [{ actor_id: 'actor-3', session_id: '', data: ENV }]);
      assert.equal(await countStored(t.db, tenant.id), 0);
    } finally {
      await later.close();
    }
  });

  it("another tenant's header never lands on this tenant", async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    await postEvents(t.app, b.ingestKey, [event()], { headers: { 'x-environment-data': header(ENV) } });
    assert.deepEqual(await environments(a.id), []);
    assert.equal((await environments(b.id)).length, 1);
  });
});

describe('environment_context of an exception (CONTRACT.md "Sessions and exceptions": both feed /v1/environment/*)', () => {
  // What the clients send as environment_context: the object of X-Environment-Data (docs/client.md).
  const CONTEXT = {
    os: 'Linux 6.8',
    os_name: 'Linux',
    os_version: '6.8',
    runtime: 'Node.js 22.1.0',
    locale: 'en-US',
    timezone: 'UTC',
    screen: { w: 1920, h: 1080 },
  };
  const STORED = { os: 'Linux 6.8', os_name: 'Linux', os_version: '6.8', runtime: 'Node.js 22.1.0', locale: 'en-US', screen: { width: 1920, height: 1080 } };

  it("is stored where X-Environment-Data is, against the exception's actor and session; its fields replace the header's, other keys stay", async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const first = exception({ actor_id: 'actor-5', environment_context: CONTEXT });
    assert.equal((await post(t.app, tenant.ingestKey, '/v1/events/exceptions', first)).statusCode, 200);
    const withHeader = exception({ actor_id: 'actor-6', session_id: sessionId, environment_context: CONTEXT });
    const res = await post(t.app, tenant.ingestKey, '/v1/events/exceptions', withHeader, { 'x-environment-data': header({ ...ENV, user_agent: 'ua/1' }) });
    assert.equal(res.statusCode, 200, res.body);
    // A repeat of an exception_id changes nothing, its environment included.
    const repeat = { ...first, environment_context: { os: 'Plan 9' } };
    assert.equal((await post(t.app, tenant.ingestKey, '/v1/events/exceptions', repeat)).statusCode, 200);
    assert.deepEqual(await environments(tenant.id), [
      { actor_id: 'actor-5', session_id: '', data: STORED },
      { actor_id: 'actor-6', session_id: sessionId, data: { ...STORED, user_agent: 'ua/1' } },
    ]);
  });

  it('never costs the exception: a context with nothing usable stores no environment', async () => {
    const tenant = await tenantWithProduct(t.app);
    const shapes: unknown[] = [
      ['Linux'],
      'Linux',
      42,
      true,
      {},
      { url: 'https://shop.example/' },
      { os: '' },
      { os: { name: 'Linux' } },
      { screen: { w: 'wide' } },
    ];
    for (const [i, context] of shapes.entries()) {
      const res = await post(t.app, tenant.ingestKey, '/v1/events/exceptions', exception({ actor_id: `shape-${i}`, environment_context: context }));
      assert.equal(res.statusCode, 200, `${JSON.stringify(context)}: ${res.body}`);
    }
    const long = await post(
      t.app,
      tenant.ingestKey,
      '/v1/events/exceptions',
      exception({ actor_id: 'long', environment_context: { os: 'L'.repeat(5_000), locale: 7 } }),
    );
    assert.equal(long.statusCode, 200, long.body);
    const [stored] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM exceptions WHERE tenant_id = $1', [tenant.id]);
    assert.equal(stored!.n, shapes.length + 1);
    assert.deepEqual(await environments(tenant.id), [{ actor_id: 'long', session_id: '', data: { os: 'L'.repeat(256), locale: 7 } }]);
  });

  it('feeds /v1/environment/{field}, from raw events and from the read model after the rollup job', async () => {
    const tenant = await tenantWithProduct(t.app);
    // A sends events with X-Environment-Data (Windows, de-DE); B events without a header (as the
    // Node client in server mode) and an exception with environment_context (Linux, en-US); C nothing.
    const day = '2026-03-10';
    const ev = (actor: string) => event({ actor_id: actor, timestamp: `${day}T10:00:00Z` });
    assert.equal(
      (await postEvents(t.app, tenant.ingestKey, [ev('A')], { headers: { 'x-environment-data': header({ os_name: 'Windows', locale: 'de-DE' }) } })).statusCode,
      200,
    );
    assert.equal((await postEvents(t.app, tenant.ingestKey, [ev('B'), ev('C')])).statusCode, 200);
    const crash = exception({
      actor_id: 'B',
      occurred_at: `${day}T10:05:00Z`,
      environment_context: { os: 'Linux', locale: 'en-US', runtime: 'Node.js 22.1.0' },
    });
    assert.equal((await post(t.app, tenant.ingestKey, '/v1/events/exceptions', crash)).statusCode, 200);
    const shares = async (field: string, filter: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/environment/${field}?from=${day}&to=2026-03-11${filter}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as { source: string; data: { value: string | null; actors: number }[] };
      return { source: body.source, values: body.data.map((r) => [r.value, r.actors]).sort() };
    };
    const expected = {
      os: [
        ['Linux', 1],
        ['Windows', 1],
        [null, 1],
      ].sort(),
      locale: [
        ['de-DE', 1],
        ['en-US', 1],
        [null, 1],
      ].sort(),
    };
    // An event-level filter (category) is answered from raw events.
    for (const field of ['os', 'locale'] as const) assert.deepEqual(await shares(field, '&category=ui'), { source: 'events', values: expected[field] }, field);
    await foldReadModel(t.db);
    for (const field of ['os', 'locale'] as const) assert.deepEqual(await shares(field, ''), { source: 'read_model', values: expected[field] }, field);
  });
});

describe('/v1/environment/{field} under an event-level filter', () => {
  it('counts the sessions of the actors the filter picks, not every session of the range', async () => {
    const tenant = await tenantWithProduct(t.app);
    // A: Windows, an `open` event, two sessions; B: Linux, a `close` event, one session.
    for (const [actor, os, name, sessions] of [
      ['A', 'Windows', 'open', 2],
      ['B', 'Linux', 'close', 1],
    ] as const) {
      const headers = { 'x-environment-data': header({ os_name: os }) };
      assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: actor, name, timestamp: at(60_000) })], { headers })).statusCode, 200);
      for (let i = 0; i < sessions; i++)
        assert.equal((await post(t.app, tenant.ingestKey, '/v1/events/sessions', sessionStart({ actor_id: actor, started_at: at(i * 1000) }))).statusCode, 200);
    }
    await foldReadModel(t.db);
    const rows = async (filter: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/environment/os?range=7d${filter}`);
      assert.equal(res.statusCode, 200, res.body);
      return (res.json().data as { value: string; actors: number; sessions: number }[]).map((r) => [r.value, r.actors, r.sessions]);
    };
    assert.deepEqual(await rows(''), [
      ['Windows', 1, 2],
      ['Linux', 1, 1],
    ]);
    assert.deepEqual(await rows('&name=open'), [['Windows', 1, 2]]);
    assert.deepEqual(await rows('&category=ui&name=close'), [['Linux', 1, 1]]);
  });
});

describe('requests race (CONTRACT.md "Browser clients")', () => {
  it('an event and an exception carrying a session_id not yet seen are accepted and keep it; the start, when it comes, is accepted', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const ev = event({ session_id: sessionId, timestamp: at(5 * 60_000) });
    const evRes = await postEvents(t.app, tenant.ingestKey, [ev]);
    assert.equal(evRes.statusCode, 200, evRes.body);
    assert.equal(evRes.json().results[0].status, 'accepted');
    const ex = exception({ session_id: sessionId });
    const exRes = await post(t.app, tenant.ingestKey, '/v1/events/exceptions', ex);
    assert.equal(exRes.statusCode, 200, exRes.body);

    const startRes = await post(t.app, tenant.ingestKey, '/v1/events/sessions', sessionStart({ session_id: sessionId }));
    assert.equal(startRes.statusCode, 200, startRes.body);
    assert.deepEqual(startRes.json(), { session_id: sessionId, status: 'accepted' });

    const [evRow] = await t.db.query<{ session_id: string }>('SELECT session_id FROM events WHERE tenant_id = $1 AND event_id = $2', [tenant.id, ev.event_id]);
    assert.equal(evRow!.session_id, sessionId);
    const [exRow] = await t.db.query<{ session_id: string }>('SELECT session_id FROM exceptions WHERE tenant_id = $1 AND exception_id = $2', [
      tenant.id,
      ex.exception_id,
    ]);
    assert.equal(exRow!.session_id, sessionId);
    const [linked] = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM sessions s JOIN events e ON e.tenant_id = s.tenant_id AND e.session_id::text = s.session_id WHERE s.tenant_id = $1 AND s.session_id = $2`,
      [tenant.id, sessionId],
    );
    assert.equal(linked!.n, 1, 'the session links the event that came first');
  });

  it("a new session's start before the old one's end: both are accepted and end normally", async () => {
    const tenant = await tenantWithProduct(t.app);
    const old = sessionStart();
    const next = sessionStart({ started_at: at(30 * 60_000) });
    assert.equal((await post(t.app, tenant.ingestKey, '/v1/events/sessions', old)).statusCode, 200);
    assert.equal((await post(t.app, tenant.ingestKey, '/v1/events/sessions', next)).statusCode, 200);
    const endOld = await post(t.app, tenant.ingestKey, '/v1/events/sessions/end', { session_id: old.session_id, ended_at: at(31 * 60_000) });
    assert.deepEqual(endOld.json(), { session_id: old.session_id, status: 'ended' });
    const [row] = await t.db.query<{ ended_at: Date | null }>('SELECT ended_at FROM sessions WHERE tenant_id = $1 AND session_id = $2', [
      tenant.id,
      next.session_id,
    ]);
    assert.equal(row!.ended_at, null, 'the new session stays open');
  });
});
