// GET /v1/exceptions/{fingerprint}/occurrences over app.inject against a real store (PGlite, or
// PostgreSQL with TEST_DATABASE_URL); nothing is faked. Right answers worked out by hand below.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, createProduct, createTenant, get, startTestApp, tenantWithProduct, type Tenant, type TestApp, post as postJson } from './helpers/app.js';

let t: TestApp;
let tenant: Tenant & { productId: string };
let group: string;
let other: string;
const sid = (i: number) => `00000000-0000-4000-8000-00000000000${i}`;

// The group (a TypeError, one stack), in occurred_at order:
//   e6  app 1.0  u1  Feb 20 00:00  non_fatal                      (before the range)
//   e1  app 1.0  u1  Mar 2 10:00   non_fatal  s1  acme  L1  env {os: linux}
//   e2  app 1.0  u2  Mar 3 09:00   fatal      s2  acme
//   e3  app 2.0  u2  Mar 3 09:00   non_fatal  s3  beta         (same instant as e2: e3 > e2 by id)
//   e4  app 2.0  u3  Mar 4 08:00   fatal      no session, no account
//   e5  web 1.0  u1  Mar 4 12:00   non_fatal
// Another group: h1, a RangeError, app 2.0, Mar 3. u2 is identified as user-2.
// Range from=2026-03-02&to=2026-03-05 (UTC), newest first: e5, e4, e3, e2, e1.
before(async () => {
  t = await startTestApp();
  tenant = await tenantWithProduct(t.app, 'business');
  await createProduct(t.app, tenant.adminKey, 'web');
  const post = async (url: string, payload: unknown) => {
    const res = await postJson(t.app, tenant.ingestKey, url, payload);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const stack = 'TypeError: x is undefined\n    at render (app/view.ts:10:5)\n    at main (app/main.ts:3:1)';
  const exception = (id: string, product: string, version: string, actor: string, at: string, severity: string, more: Record<string, unknown> = {}) =>
    post('/v1/events/exceptions', {
      exception_id: id,
      exception_type: 'TypeError',
      severity,
      message: `x is undefined (${id})`,
      stack_trace: stack,
      occurred_at: at,
      actor_id: actor,
      product,
      product_version: version,
      ...more,
    });
  group = (await exception('e6', 'app', '1.0', 'u1', '2026-02-20T00:00:00Z', 'non_fatal')).fingerprint;
  const fps = [
    await exception('e1', 'app', '1.0', 'u1', '2026-03-02T10:00:00Z', 'non_fatal', {
      session_id: sid(1),
      account_id: 'acme',
      license_id: 'L1',
      environment_context: { os: 'linux' },
    }),
    await exception('e2', 'app', '1.0', 'u2', '2026-03-03T09:00:00Z', 'fatal', { session_id: sid(2), account_id: 'acme' }),
    await exception('e3', 'app', '2.0', 'u2', '2026-03-03T09:00:00Z', 'non_fatal', { session_id: sid(3), account_id: 'beta' }),
    await exception('e4', 'app', '2.0', 'u3', '2026-03-04T08:00:00Z', 'fatal'),
    await exception('e5', 'web', '1.0', 'u1', '2026-03-04T12:00:00Z', 'non_fatal'),
  ].map((r) => r.fingerprint);
  assert.deepEqual(new Set(fps), new Set([group]));
  other = (
    await post('/v1/events/exceptions', {
      exception_id: 'h1',
      exception_type: 'RangeError',
      severity: 'fatal',
      message: 'out of range',
      stack_trace: 'RangeError: out of range\n    at grow (app/buffer.ts:1:1)',
      occurred_at: '2026-03-03T10:00:00Z',
      actor_id: 'u2',
      product: 'app',
      product_version: '2.0',
    })
  ).fingerprint;
  assert.notEqual(other, group);
  await post('/v1/actors/identify', {
    anonymous_actor_id: 'u2',
    identified_actor_id: 'user-2',
    identified_at: '2026-03-01T00:00:00Z',
    product: 'app',
    product_version: '2.0',
  });
});
after(async () => t.close());

const RANGE = 'from=2026-03-02&to=2026-03-05';
const url = (query: string, fp = group) => `/v1/exceptions/${fp}/occurrences?${query}`;
async function ok(query: string, key = tenant.adminKey, fp = group) {
  const res = await get(t.app, key, url(query, fp));
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}
const ids = async (query: string, key = tenant.adminKey) => (await ok(query, key)).data.map((o: { exception_id: string }) => o.exception_id);
function bad(res: LightMyRequestResponse, status: number, code: string, field?: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(res.headers['content-type'] as string, /application\/problem\+json/);
  const body = res.json();
  assert.equal(body.code, code);
  if (field) assert.ok(JSON.stringify(body).includes(field), `${res.body} names ${field}`);
}

describe('GET /v1/exceptions/{fingerprint}/occurrences', () => {
  it('newest first, each occurrence whole; the range is echoed', async () => {
    const body = await ok(RANGE);
    assert.deepEqual(body.range, { from: '2026-03-02T00:00:00.000Z', to: '2026-03-05T00:00:00.000Z' });
    assert.equal(body.tz, 'UTC');
    assert.equal(body.next_cursor, null);
    assert.deepEqual(
      body.data.map((o: { exception_id: string }) => o.exception_id),
      ['e5', 'e4', 'e3', 'e2', 'e1'],
    );
    const e1 = body.data[4];
    assert.ok(Date.parse(e1.received_at) > Date.parse('2026-03-05T00:00:00Z'));
    assert.deepEqual(
      { ...e1, received_at: undefined },
      {
        exception_id: 'e1',
        occurred_at: '2026-03-02T10:00:00.000Z',
        received_at: undefined,
        product: 'app',
        product_version: '1.0',
        exception_type: 'TypeError',
        severity: 'non_fatal',
        message: 'x is undefined (e1)',
        actor_id: 'u1',
        identified_actor_id: null,
        session_id: sid(1),
        account_id: 'acme',
        license_id: 'L1',
        environment: { os: 'linux' },
      },
    );
    const e3 = body.data[2];
    assert.deepEqual(
      [e3.actor_id, e3.identified_actor_id, e3.session_id, e3.account_id, e3.license_id, e3.environment, e3.severity, e3.product_version],
      ['u2', 'user-2', sid(3), 'beta', null, null, 'non_fatal', '2.0'],
    );
    const e4 = body.data[1];
    assert.deepEqual([e4.session_id, e4.account_id, e4.severity], [null, null, 'fatal']);
  });

  it('pages by cursor across a page boundary, through two occurrences at the same instant', async () => {
    // limit 3: e5, e4, e3 | e2, e1. e3 and e2 share 09:00:00 on Mar 3: the cursor's id breaks the tie.
    const first = await ok(`${RANGE}&limit=3`);
    assert.deepEqual(
      first.data.map((o: { exception_id: string }) => o.exception_id),
      ['e5', 'e4', 'e3'],
    );
    assert.equal(typeof first.next_cursor, 'string');
    const second = await ok(`${RANGE}&limit=3&cursor=${first.next_cursor}`);
    assert.deepEqual(
      second.data.map((o: { exception_id: string }) => o.exception_id),
      ['e2', 'e1'],
    );
    assert.equal(second.next_cursor, null);
    // limit 2: e5, e4 | e3, e2 | e1.
    const a = await ok(`${RANGE}&limit=2`);
    const b = await ok(`${RANGE}&limit=2&cursor=${a.next_cursor}`);
    const c = await ok(`${RANGE}&limit=2&cursor=${b.next_cursor}`);
    assert.deepEqual(
      [a, b, c].map((p) => p.data.map((o: { exception_id: string }) => o.exception_id)),
      [['e5', 'e4'], ['e3', 'e2'], ['e1']],
    );
    assert.equal(c.next_cursor, null);
    // The cursor keeps the filters of its request: with severity=fatal (e4, e2), limit 1.
    const f1 = await ok(`${RANGE}&severity=fatal&limit=1`);
    const f2 = await ok(`${RANGE}&severity=fatal&limit=1&cursor=${f1.next_cursor}`);
    assert.deepEqual([f1.data[0].exception_id, f2.data[0].exception_id, f2.next_cursor], ['e4', 'e2', null]);
  });

  it('filters: product, version (latest too), severity, range in a time zone, account and license', async () => {
    assert.deepEqual(await ids(`${RANGE}&product=app`), ['e4', 'e3', 'e2', 'e1']);
    assert.deepEqual(await ids(`${RANGE}&product=web`), ['e5']);
    // app's versions seen: 1.0, 2.0; latest = 2.0.
    assert.deepEqual(await ids(`${RANGE}&product=app&version=latest`), ['e4', 'e3']);
    assert.deepEqual(await ids(`${RANGE}&version=1.0`), ['e5', 'e2', 'e1']);
    assert.deepEqual(await ids(`${RANGE}&severity=fatal`), ['e4', 'e2']);
    assert.deepEqual(await ids(`${RANGE}&severity=non_fatal`), ['e5', 'e3', 'e1']);
    // Tokyo (UTC+9), Mar 3 local = Mar 2 15:00 – Mar 3 15:00 UTC: e3 and e2 (09:00 UTC), not e1 (Mar 2 10:00) nor e4 (Mar 4 08:00).
    const tokyo = await ok('from=2026-03-03&to=2026-03-04&tz=Asia/Tokyo');
    assert.deepEqual(tokyo.range, { from: '2026-03-02T15:00:00.000Z', to: '2026-03-03T15:00:00.000Z' });
    assert.deepEqual(
      tokyo.data.map((o: { exception_id: string }) => o.exception_id),
      ['e3', 'e2'],
    );
    // A wider range takes e6 (Feb 20) too.
    assert.deepEqual(await ids('from=2026-02-01&to=2026-03-05&product=app'), ['e4', 'e3', 'e2', 'e1', 'e6']);
    assert.deepEqual(await ids(`${RANGE}&account_id=acme`), ['e2', 'e1']);
    assert.deepEqual(await ids(`${RANGE}&license_id=L1`), ['e1']);
    assert.deepEqual(await ids(`${RANGE}&account_id=nobody`), []);
  });

  it('account ids only for keys that may see accounts; account filters follow the plan and account context', async () => {
    const readKey = await issueKey(tenant.id, ['read']);
    const body = await ok(RANGE, readKey);
    assert.deepEqual(
      body.data.map((o: { exception_id: string }) => o.exception_id),
      ['e5', 'e4', 'e3', 'e2', 'e1'],
    );
    for (const o of body.data) assert.ok(!('account_id' in o) && !('license_id' in o), JSON.stringify(o));
    bad(await get(t.app, readKey, url(`${RANGE}&account_id=acme`)), 403, 'forbidden');

    // A plan without account views (pro): no account ids shown, the filter a 402.
    await patchTenant(tenant.id, { plan: 'pro' });
    try {
      const pro = await ok(RANGE);
      assert.equal(pro.data.length, 5);
      for (const o of pro.data) assert.ok(!('account_id' in o), JSON.stringify(o));
      bad(await get(t.app, tenant.adminKey, url(`${RANGE}&license_id=L1`)), 402, 'plan_limit_reached');
      // Business again with account context off: hidden, and the filter a 403.
      await patchTenant(tenant.id, { plan: 'business', account_context_enabled: false });
      const off = await ok(RANGE);
      for (const o of off.data) assert.ok(!('account_id' in o), JSON.stringify(o));
      bad(await get(t.app, tenant.adminKey, url(`${RANGE}&account_id=acme`)), 403, 'account_context_disabled');
    } finally {
      await patchTenant(tenant.id, { plan: 'business', account_context_enabled: true });
    }
    assert.equal((await ok(RANGE)).data[4].account_id, 'acme');
  });

  it('an unknown fingerprint, another tenant’s, or a group not in the product is a 404', async () => {
    bad(await get(t.app, tenant.adminKey, url(RANGE, 'f'.repeat(64))), 404, 'not_found');
    bad(await get(t.app, tenant.adminKey, url(`${RANGE}&product=web`, other)), 404, 'not_found');
    assert.deepEqual(
      (await ok(`${RANGE}&product=app`, tenant.adminKey, other)).data.map((o: { exception_id: string }) => o.exception_id),
      ['h1'],
    );
    const stranger = await createTenant(t.app, 'business');
    bad(await get(t.app, stranger.adminKey, url(RANGE)), 404, 'not_found');
    // Known group, nothing in the range: an empty page, not a 404.
    assert.deepEqual((await ok('from=2026-01-01&to=2026-02-01')).data, []);
  });

  it('bad input is a problem+json 400 naming the field', async () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const cursor of ['not*base64', b64(['x']), b64(['2024-02-30T00:00:00.000000Z', 'e1']), b64([1, 2]), b64(['2026-03-03T09:00:00.000000Z'])])
      bad(await get(t.app, tenant.adminKey, url(`${RANGE}&cursor=${encodeURIComponent(cursor)}`)), 400, 'validation_error', 'cursor');
    bad(await get(t.app, tenant.adminKey, url(`${RANGE}&limit=0`)), 400, 'validation_error', 'limit');
    bad(await get(t.app, tenant.adminKey, url(`${RANGE}&limit=501`)), 400, 'validation_error', 'limit');
    bad(await get(t.app, tenant.adminKey, url(`${RANGE}&severity=warning`)), 400, 'validation_error', 'severity');
    bad(await get(t.app, tenant.adminKey, url(`${RANGE}&interval=fortnight`)), 400, 'validation_error', 'interval');
    bad(await get(t.app, tenant.adminKey, url(`${RANGE}&compare=true`)), 400, 'validation_error', 'compare');
    // interval is one of the query side's common parameters (CONTRACT.md): taken and echoed, though a list is not cut by it.
    const withInterval = await get(t.app, tenant.adminKey, url(`${RANGE}&interval=week`));
    assert.equal(withInterval.statusCode, 200, withInterval.body);
    assert.equal(withInterval.json().interval, 'week');
    bad(await get(t.app, tenant.adminKey, url('from=2026-02-30')), 400, 'validation_error', 'from');
    bad(await get(t.app, tenant.adminKey, url('tz=Mars/Olympus')), 400, 'validation_error', 'tz');
    bad(await get(t.app, tenant.adminKey, url('version=latest')), 400, 'validation_error', 'version');
    assert.equal((await get(t.app, tenant.ingestKey, url(RANGE))).statusCode, 403);
  });

  it('CSV: one row per occurrence, the range in headers', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: url(`${RANGE}&limit=2`),
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-range-from'], '2026-03-02T00:00:00.000Z');
    const lines = res.body.trim().split('\r\n');
    assert.equal(lines.length, 3);
    assert.match(lines[1]!, /^e5,/);
    assert.match(lines[2]!, /^e4,/);
  });
});

async function issueKey(tenantId: string, permissions: string[]): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/tenants/${tenantId}/keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { permissions, name: permissions.join('-') },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().key;
}

async function patchTenant(id: string, payload: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({ method: 'PATCH', url: `/admin/v1/tenants/${id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload });
  assert.equal(res.statusCode, 200, res.body);
}
