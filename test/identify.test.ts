// POST /v1/actors/identify over app.inject against a real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { get, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const IDENTIFIED_AT = '2026-01-02T03:04:05.000Z';

/** The clients' wire shape (CONTRACT.md). */
function link(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    anonymous_actor_id: 'anon-7f3a',
    identified_actor_id: 'user-42',
    identified_at: IDENTIFIED_AT,
    product: 'app',
    product_version: '1.0.0',
    ...overrides,
  };
}

function identify(key: string | undefined, body: unknown) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/actors/identify',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

interface Link {
  anonymous_actor_id: string;
  identified_actor_id: string;
  identified_at: string;
  product_id: string;
  product_version: string | null;
}

async function links(tenantId: string): Promise<Link[]> {
  const rows = await t.db.query<Omit<Link, 'identified_at'> & { identified_at: Date }>(
    'SELECT anonymous_actor_id, identified_actor_id, identified_at, product_id, product_version FROM actor_links WHERE tenant_id = $1 ORDER BY anonymous_actor_id',
    [tenantId],
  );
  return rows.map((r) => ({ ...r, identified_at: new Date(r.identified_at).toISOString() }));
}

async function strictOn(adminKey: string): Promise<void> {
  const res = await t.app.inject({
    method: 'PATCH',
    url: '/v1/products/app',
    headers: { authorization: `Bearer ${adminKey}` },
    payload: { strict_versions_enabled: true },
  });
  assert.equal(res.statusCode, 200, res.body);
}

function assertProblem(
  res: { statusCode: number; body: string; headers: Record<string, unknown>; json(): { code: string } },
  status: number,
  code?: string,
): void {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  if (code) assert.equal(res.json().code, code);
}

describe('POST /v1/actors/identify', () => {
  it('links an anonymous actor to a user: 200 {status: accepted}', async () => {
    const tenant = await tenantWithProduct(t.app);
    const res = await identify(tenant.ingestKey, link());
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'accepted' });
    assert.deepEqual(await links(tenant.id), [
      { anonymous_actor_id: 'anon-7f3a', identified_actor_id: 'user-42', identified_at: IDENTIFIED_AT, product_id: tenant.productId, product_version: '1.0.0' },
    ]);
  });

  it('the same link again answers 200 and stores it once', async () => {
    const tenant = await tenantWithProduct(t.app);
    await identify(tenant.ingestKey, link());
    const again = await identify(tenant.ingestKey, link({ identified_at: '2026-01-03T00:00:00.000Z' }));
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), { status: 'accepted' });
    const stored = await links(tenant.id);
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.identified_at, IDENTIFIED_AT, 'the first link is kept');
  });

  it('a different user for the same anonymous id answers 409 actor_already_linked and keeps the first link', async () => {
    const tenant = await tenantWithProduct(t.app);
    await identify(tenant.ingestKey, link());
    assertProblem(await identify(tenant.ingestKey, link({ identified_actor_id: 'user-43' })), 409, 'actor_already_linked');
    const stored = await links(tenant.id);
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.identified_actor_id, 'user-42');
    assert.equal(
      (await identify(tenant.ingestKey, link({ anonymous_actor_id: 'anon-other', identified_actor_id: 'user-42' }))).statusCode,
      200,
      'one user may have several anonymous ids',
    );
  });

  it('accepts a null product_version (the wire shape allows product_version|null)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const res = await identify(tenant.ingestKey, link({ product_version: null }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await links(tenant.id))[0]!.product_version, null);
  });

  it('identified_at null is read as absent: the time of receipt', async () => {
    const tenant = await tenantWithProduct(t.app);
    const before = Date.now();
    const res = await identify(tenant.ingestKey, link({ identified_at: null }));
    assert.equal(res.statusCode, 200, res.body);
    const [stored] = await links(tenant.id);
    assert.ok(Date.parse(stored!.identified_at) >= before - 1000, stored!.identified_at);
  });

  it('strict mode on: a null product_version passes', async () => {
    const tenant = await tenantWithProduct(t.app);
    await strictOn(tenant.adminKey);
    const res = await identify(tenant.ingestKey, link({ product_version: null }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await links(tenant.id))[0]!.product_version, null);
  });

  it('strict mode on: a non-null unregistered version answers 422 UNREGISTERED_VERSION and the identity is not recorded', async () => {
    const tenant = await tenantWithProduct(t.app);
    await strictOn(tenant.adminKey);
    assertProblem(await identify(tenant.ingestKey, link({ product_version: '9.9.9' })), 422, 'UNREGISTERED_VERSION');
    assert.deepEqual(await links(tenant.id), []);
  });

  it('reads the legacy source_app / source_version names', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { product: _p, product_version: _v, ...rest } = link();
    const res = await identify(tenant.ingestKey, { ...rest, source_app: 'app', source_version: '0.9.1' });
    assert.equal(res.statusCode, 200, res.body);
    const [stored] = await links(tenant.id);
    assert.equal(stored!.product_id, tenant.productId);
    assert.equal(stored!.product_version, '0.9.1');
    const nullVersion = await identify(tenant.ingestKey, { ...rest, anonymous_actor_id: 'anon-2', source_app: 'app', source_version: null });
    assert.equal(nullVersion.statusCode, 200, nullVersion.body);
  });

  it('a missing field answers 422 with errors naming the field', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const field of ['anonymous_actor_id', 'identified_actor_id', 'product', 'product_version']) {
      const body = link();
      delete body[field];
      const res = await identify(tenant.ingestKey, body);
      assertProblem(res, 422);
      assert.ok(
        res.json().errors.some((e: { field: string }) => e.field === field),
        `${field}: ${res.body}`,
      );
    }
    assert.deepEqual(await links(tenant.id), []);
  });

  it('an unknown product answers 422 UNRECOGNIZED_PRODUCT', async () => {
    const tenant = await tenantWithProduct(t.app);
    assertProblem(await identify(tenant.ingestKey, link({ product: 'ghost' })), 422, 'UNRECOGNIZED_PRODUCT');
    assert.deepEqual(await links(tenant.id), []);
  });

  it('every 422 is kept as a dead letter with kind identify', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { identified_actor_id: _i, ...bad } = link();
    await identify(tenant.ingestKey, bad);
    const { data } = (await get(t.app, tenant.adminKey, '/v1/invalid-events?kind=identify')).json();
    assert.equal(data.length, 1);
    assert.equal(data[0].kind, 'identify');
    assert.equal(data[0].reason, 'validation_error');
    assert.equal(data[0].product, 'app');
    assert.deepEqual(data[0].payload, bad);
  });

  it('answers 401 without an API key and records nothing', async () => {
    const tenant = await tenantWithProduct(t.app);
    assertProblem(await identify(undefined, link()), 401, 'unauthorized');
    assert.deepEqual(await links(tenant.id), []);
  });

  it('links are per tenant: the same anonymous id in two tenants may go to different users', async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    assert.equal((await identify(a.ingestKey, link())).statusCode, 200);
    assert.equal((await identify(b.ingestKey, link({ identified_actor_id: 'user-b' }))).statusCode, 200);
    assert.equal((await links(a.id))[0]!.identified_actor_id, 'user-42');
    assert.equal((await links(b.id))[0]!.identified_actor_id, 'user-b');
  });
});
