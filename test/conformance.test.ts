// Statements of CONTRACT.md and SPEC.md checked one by one over app.inject against a real store
// (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing is faked. Each test names its line.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { ADMIN_TOKEN, event, foldReadModel, get, post, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const HOUR = 3_600_000;

/** Runs the rollup job once (the read model's fold), as its timer would. */
const fold = () => foldReadModel(t.db);

describe('CONTRACT.md, Accounts and licenses: "?limit= (default 50, max 500) … The same pagination everywhere in the API"', () => {
  it('the drill-down lists of funnels and retention (POST bodies) default to 50 rows, take 500, refuse 501', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const at = new Date(Date.now() - HOUR).toISOString();
    const actors = Array.from({ length: 51 }, (_, i) => `u${String(i).padStart(2, '0')}`);
    const batch = actors.flatMap((a) => [event({ actor_id: a, name: 'open', timestamp: at }), event({ actor_id: a, name: 'pay', timestamp: at })]);
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    await fold();
    const steps = [
      { category: 'ui', name: 'open' },
      { category: 'ui', name: 'pay' },
    ];
    const lists: [string, Record<string, unknown>][] = [
      ['/v1/funnels/actors', { steps, step: 1 }],
      ['/v1/retention/actors', { cohort: 0, cohort_period: 0, period: 'day', periods: 1, from: at.slice(0, 10) }],
    ];
    for (const [url, body] of lists) {
      const first = await post(t.app, tenant.adminKey, url, body);
      assert.equal(first.statusCode, 200, `${url}: ${first.body}`);
      assert.equal(first.json().data.length, 50, url);
      assert.equal(typeof first.json().next_cursor, 'string', url);
      const rest = await post(t.app, tenant.adminKey, url, { ...body, cursor: first.json().next_cursor });
      assert.equal(rest.json().data.length, 1, url);
      assert.equal(rest.json().next_cursor, null, url);
      const all = await post(t.app, tenant.adminKey, url, { ...body, limit: 500 });
      assert.equal(all.json().data.length, 51, url);
      assert.equal(all.json().next_cursor, null, url);
      const over = await post(t.app, tenant.adminKey, url, { ...body, limit: 501 });
      assert.equal(over.statusCode, 400, url);
      assert.equal(over.json().code, 'validation_error', url);
    }
  });
});

describe('CONTRACT.md, Errors and Units: "Every non-2xx body is RFC 9457 problem details"; "when … the server is shutting down, the answer is 503 with Retry-After"', () => {
  it('a request pipelined behind an in-flight one while the server closes gets 503 problem+json with Retry-After and the CORS headers', async () => {
    const own = await startTestApp();
    const tenant = await tenantWithProduct(own.app, 'business');
    await own.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = own.app.server.address() as { port: number };
    const body = JSON.stringify([event()]);
    const head = `POST /v1/events HTTP/1.1\r\nHost: tally\r\nAuthorization: Bearer ${tenant.ingestKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    const ended = new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => socket.once('connect', resolve));
    // The first request is in flight (its body not all sent) when the close begins; the second
    // arrives on the same connection behind it.
    socket.write(head + body.slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const closing = own.app.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write(body.slice(10) + head + body);
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    socket.destroy();
    await closing;
    await own.db.close();
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, 2, received);
    assert.match(answers[0]!, /^HTTP\/1\.1 200 /, 'the in-flight request finishes');
    const [rawHead, rawBody] = answers[1]!.split('\r\n\r\n');
    assert.match(rawHead!, /^HTTP\/1\.1 503 /);
    const headers = Object.fromEntries(
      rawHead!
        .split('\r\n')
        .slice(1)
        .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    assert.match(headers['content-type']!, /^application\/problem\+json/);
    assert.ok(Number(headers['retry-after']) >= 1, rawHead);
    assert.equal(headers['access-control-allow-origin'], '*');
    const problem = JSON.parse(rawBody!);
    assert.equal(problem.status, 503);
    assert.equal(typeof problem.code, 'string');
  });
});

describe('CONTRACT.md, Query side: "Permission `read` for every query … `view_accounts` additionally for per-account and per-license answers"', () => {
  it('GET /v1/exceptions takes a key with read; one with only manage_products or only view_accounts is 403 forbidden', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const keyWith = async (permissions: string[]) => {
      const res = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/tenants/${tenant.id}/keys`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { name: permissions.join('+'), permissions },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().key as string;
    };
    assert.equal((await get(t.app, await keyWith(['read']), '/v1/exceptions')).statusCode, 200);
    assert.equal((await get(t.app, await keyWith(['read', 'view_accounts']), '/v1/exceptions?account_id=acme')).statusCode, 200);
    for (const permissions of [['manage_products'], ['view_accounts'], ['ingest']]) {
      const key = await keyWith(permissions);
      for (const url of ['/v1/exceptions', '/v1/exceptions?account_id=acme']) {
        const res = await get(t.app, key, url);
        assert.equal(res.statusCode, 403, `${permissions} ${url}`);
        assert.equal(res.json().code, 'forbidden');
      }
    }
  });
});

describe('CONTRACT.md, Query side: "`tz` (IANA name, default `UTC`) … every answer echoes … the time zone"', () => {
  it('echoes a zone given in another case in its IANA spelling, and answers as for it', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const at = new Date(Date.now() - HOUR).toISOString();
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ timestamp: at })])).statusCode, 200);
    const day = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 10);
    const range = `from=${day(-7 * 24 * HOUR)}&to=${day(2 * 24 * HOUR)}`;
    for (const [given, echoed] of [
      ['utc', 'UTC'],
      ['europe/berlin', 'Europe/Berlin'],
      ['AMERICA/NEW_YORK', 'America/New_York'],
    ]) {
      const res = await get(t.app, tenant.adminKey, `/v1/events?${range}&tz=${encodeURIComponent(given!)}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().tz, echoed);
      assert.equal(res.json().data.length, 1);
      const trends = await get(t.app, tenant.adminKey, `/v1/reports/trends?${range}&tz=${encodeURIComponent(given!)}`);
      const canonical = await get(t.app, tenant.adminKey, `/v1/reports/trends?${range}&tz=${encodeURIComponent(echoed!)}`);
      assert.deepEqual(trends.json(), canonical.json());
    }
  });
});

describe('CONTRACT.md, Errors: "Validation errors add `errors: [{ field, message }]`"', () => {
  it('a body that is not JSON, or empty, is 400 validation_error with errors naming body (management and query routes)', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const send = (url: string, payload: string) =>
      t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${tenant.adminKey}`, 'content-type': 'application/json' }, payload });
    for (const url of ['/v1/version-registrations', '/v1/products', '/v1/funnels', '/v1/segments']) {
      for (const payload of ['{"product": "app",', 'not json', '']) {
        const res = await send(url, payload);
        assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(payload)}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        const body = res.json();
        assert.equal(body.code, 'validation_error');
        assert.ok(Array.isArray(body.errors) && body.errors.length > 0, `${url} ${JSON.stringify(payload)}: ${res.body}`);
        assert.equal(body.errors[0].field, 'body');
        assert.equal(typeof body.errors[0].message, 'string');
      }
    }
  });
});

describe('SPEC.md, Limits: "properties | 20 keys; key 64 chars; value 256 chars | event, session"', () => {
  it('a session start takes 20 keys, a 64-char key and a 256-char value; 21 keys, 65, 257 or a nested value are 422', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const start = (properties: unknown) =>
      post(t.app, tenant.ingestKey, '/v1/events/sessions', {
        session_id: crypto.randomUUID(),
        actor_id: 'a',
        product: 'app',
        product_version: '1.0',
        started_at: new Date(Date.now() - HOUR).toISOString(),
        properties,
      });
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    for (const ok of [keys(20), { ['é'.repeat(64)]: 'v' }, { k: '中'.repeat(256) }])
      assert.equal((await start(ok)).statusCode, 200, JSON.stringify(ok).slice(0, 80));
    for (const bad of [keys(21), { ['é'.repeat(65)]: 'v' }, { k: '中'.repeat(257) }, { k: { nested: 1 } }, { k: [1] }]) {
      const res = await start(bad);
      assert.equal(res.statusCode, 422, JSON.stringify(bad).slice(0, 80));
      assert.equal(res.json().errors[0].field.split('.')[0], 'properties');
    }
  });
});

describe('SPEC.md, Strict-mode rejection per endpoint: an archived version ("its status is not `active`") on sessions, exceptions, identify', () => {
  it('is 422 UNREGISTERED_VERSION on each; set active again, it is accepted', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const version = (await post(t.app, tenant.adminKey, '/v1/version-registrations', { product: 'app', product_version: '1.0' })).json();
    const patch = (url: string, payload: object) => t.app.inject({ method: 'PATCH', url, headers: { authorization: `Bearer ${tenant.adminKey}` }, payload });
    assert.equal((await patch('/v1/products/app', { strict_versions_enabled: true })).statusCode, 200);
    const at = new Date(Date.now() - HOUR).toISOString();
    const send = () => [
      post(t.app, tenant.ingestKey, '/v1/events/sessions', {
        session_id: crypto.randomUUID(),
        actor_id: 'a',
        product: 'app',
        product_version: '1.0',
        started_at: at,
      }),
      post(t.app, tenant.ingestKey, '/v1/events/exceptions', {
        exception_id: crypto.randomUUID(),
        exception_type: 'E',
        severity: 'fatal',
        occurred_at: at,
        actor_id: 'a',
        product: 'app',
        product_version: '1.0',
      }),
      post(t.app, tenant.ingestKey, '/v1/actors/identify', {
        anonymous_actor_id: crypto.randomUUID(),
        identified_actor_id: 'u',
        identified_at: at,
        product: 'app',
        product_version: '1.0',
      }),
    ];
    assert.equal((await patch(`/v1/products/app/versions/${version.id}`, { status: 'archived' })).statusCode, 200);
    for (const res of await Promise.all(send())) {
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().code, 'UNREGISTERED_VERSION');
    }
    assert.equal((await patch(`/v1/products/app/versions/${version.id}`, { status: 'active' })).statusCode, 200);
    for (const res of await Promise.all(send())) assert.equal(res.statusCode, 200, res.body);
  });
});
