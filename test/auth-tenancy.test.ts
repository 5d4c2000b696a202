// Authentication, permissions and tenant isolation over app.inject against a real store; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, createTenant, event, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
const logs: string[] = [];
before(async () => {
  const { Writable } = await import('node:stream');
  const stream = new Writable({ write: (chunk, _enc, cb) => (logs.push(String(chunk)), cb()) });
  t = await startTestApp({ logger: { level: 'trace', stream } });
});
after(async () => t.close());

describe('authentication', () => {
  it('BAD-INPUTS 32: no header, Basic, empty Bearer and a key in the query string are 401, and the key never reaches the logs', async () => {
    const tenant = await tenantWithProduct(t.app);
    const cases: Record<string, string | undefined>[] = [
      {},
      { authorization: `Basic ${Buffer.from(`x:${tenant.ingestKey}`).toString('base64')}` },
      { authorization: 'Bearer ' },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${tenant.ingestKey}x` },
      { authorization: 'Bearer tk_live_nottherightlengthatall' },
    ];
    for (const headers of cases) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { 'content-type': 'application/json', ...headers } as Record<string, string>,
        payload: JSON.stringify([event()]),
      });
      assert.equal(res.statusCode, 401, JSON.stringify(headers));
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(res.json().code, 'unauthorized');
    }
    const inQuery = await t.app.inject({
      method: 'POST',
      url: `/v1/events?api_key=${tenant.ingestKey}&key=${tenant.ingestKey}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify([event()]),
    });
    assert.equal(inQuery.statusCode, 401);
    // A request that fails inside the handler is logged: make one with the key in the URL too.
    await t.app.inject({ method: 'GET', url: `/v1/products?key=${tenant.ingestKey}`, headers: { authorization: `Bearer ${tenant.adminKey}` } });
    const all = logs.join('');
    assert.ok(!all.includes(tenant.ingestKey), 'an API key reached the logs');
    assert.ok(!all.includes(tenant.adminKey), 'an API key reached the logs');
  });

  it('decides 401 from the headers before reading the body', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'content-type': 'application/json' }, payload: 'this is not json' });
    assert.equal(res.statusCode, 401);
  });

  /** A new ingest key of a new tenant, used once (so that a store that keeps look-ups has it in memory), and its revocation. */
  async function usedKey(): Promise<{ key: string; revoke: () => Promise<number> }> {
    const tenant = await tenantWithProduct(t.app);
    const issued = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/tenants/${tenant.id}/keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'ci', permissions: ['ingest'] },
    });
    assert.equal(issued.statusCode, 201);
    const { id, key } = issued.json();
    assert.equal((await postEvents(t.app, key, [event()])).statusCode, 200);
    const revoke = async () =>
      (await t.app.inject({ method: 'DELETE', url: `/admin/v1/tenants/${tenant.id}/keys/${id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
        .statusCode;
    return { key, revoke };
  }

  it('BAD-INPUTS 33: a revoked key is 401 at once', async () => {
    const { key, revoke } = await usedKey();
    assert.equal(await revoke(), 204);
    assert.equal((await postEvents(t.app, key, [event()])).statusCode, 401);
  });

  it('a key revoked while its requests are in flight: each of those is 200 or 401, and every request after the 204 is 401', async () => {
    const { key, revoke } = await usedKey();
    const inFlight = Array.from({ length: 20 }, () => postEvents(t.app, key, [event()]));
    assert.equal(await revoke(), 204);
    const later = await Promise.all(Array.from({ length: 5 }, () => postEvents(t.app, key, [event()])));
    assert.deepEqual(
      later.map((r) => r.statusCode),
      [401, 401, 401, 401, 401],
    );
    for (const r of await Promise.all(inFlight)) assert.ok([200, 401].includes(r.statusCode), `in flight: ${r.statusCode}`);
  });

  it('BAD-INPUTS 36 (permissions): a key without the permission gets 403 forbidden', async () => {
    const tenant = await tenantWithProduct(t.app);
    const asIngest = await t.app.inject({
      method: 'POST',
      url: '/v1/products',
      headers: { authorization: `Bearer ${tenant.ingestKey}` },
      payload: { slug: 'x' },
    });
    assert.equal(asIngest.statusCode, 403);
    assert.equal(asIngest.json().code, 'forbidden');
    assert.equal(
      (
        await t.app.inject({
          method: 'PATCH',
          url: '/v1/products/app',
          headers: { authorization: `Bearer ${tenant.ingestKey}` },
          payload: { strict_versions_enabled: true },
        })
      ).statusCode,
      403,
    );
    assert.equal((await get(t.app, tenant.ingestKey, '/v1/invalid-events')).statusCode, 403);
    const readKey = (
      await t.app.inject({
        method: 'POST',
        url: `/admin/v1/tenants/${tenant.id}/keys`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { permissions: ['read'] },
      })
    ).json().key;
    assert.equal((await postEvents(t.app, readKey, [event()])).statusCode, 403);
    assert.equal((await get(t.app, readKey, '/v1/products')).statusCode, 200);
  });
});

describe("tenant isolation: another tenant's id is the same 404 as a missing one", () => {
  it('BAD-INPUTS 34: products, versions, invalid events', async () => {
    const a = await tenantWithProduct(t.app);
    const b = await createTenant(t.app);
    await postEvents(t.app, a.ingestKey, [event(), event({ properties: { license: 'x' } })]);
    const missing = '01a1fcd1-0000-7000-8000-000000000000';
    for (const url of [`/v1/products/${a.productId}`, `/v1/products/${a.productId}/versions`]) {
      const foreign = await get(t.app, b.adminKey, url);
      const none = await get(t.app, b.adminKey, url.replace(a.productId, missing));
      assert.equal(foreign.statusCode, 404, url);
      assert.deepEqual(foreign.json(), { ...none.json(), detail: foreign.json().detail });
      assert.equal(foreign.json().code, 'product_not_found');
    }
    // By slug too: B has no product "app".
    assert.equal((await get(t.app, b.adminKey, '/v1/products/app')).statusCode, 404);
    for (const method of ['PATCH', 'DELETE'] as const) {
      const res = await t.app.inject({
        method,
        url: `/v1/products/${a.productId}`,
        headers: { authorization: `Bearer ${b.adminKey}` },
        payload: method === 'PATCH' ? { strict_versions_enabled: true } : undefined,
      });
      assert.equal(res.statusCode, 404, method);
    }
    assert.equal((await get(t.app, a.adminKey, `/v1/products/${a.productId}`)).json().strict_versions_enabled, false);
    assert.equal((await get(t.app, a.adminKey, `/v1/products/${a.productId}`)).json().status, 'active');
    // Invalid events: B sees none of A's.
    assert.equal((await get(t.app, a.adminKey, '/v1/invalid-events')).json().data.length, 1);
    assert.deepEqual((await get(t.app, b.adminKey, '/v1/invalid-events')).json().data, []);
  });

  it('BAD-INPUTS 27: the same event_id in two tenants is stored for both', async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    const e = event();
    const ra = (await postEvents(t.app, a.ingestKey, [e])).json();
    const rb = (await postEvents(t.app, b.ingestKey, [e])).json();
    assert.equal(ra.results[0].duplicate, undefined);
    assert.equal(rb.results[0].duplicate, undefined);
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE event_id = $1', [e.event_id]);
    assert.equal(row!.n, 2);
  });

  it('admin: an unknown tenant or a key of another tenant is 404', async () => {
    const a = await createTenant(t.app);
    const b = await createTenant(t.app);
    const keyOfA = (
      await t.app.inject({
        method: 'POST',
        url: `/admin/v1/tenants/${a.id}/keys`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { permissions: ['read'] },
      })
    ).json();
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/tenants/${b.id}/keys/${keyOfA.id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.statusCode, 404);
    assert.equal((await get(t.app, keyOfA.key, '/v1/products')).statusCode, 200, 'the key of A still works');
    assert.equal(
      (
        await t.app.inject({
          method: 'GET',
          url: '/admin/v1/tenants/01a1fcd1-0000-7000-8000-000000000000',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).statusCode,
      404,
    );
    assert.equal((await t.app.inject({ method: 'GET', url: `/admin/v1/tenants/${a.id}`, headers: { authorization: 'Bearer wrong' } })).statusCode, 401);
    assert.equal((await t.app.inject({ method: 'GET', url: `/admin/v1/tenants/${a.id}`, headers: { authorization: `Bearer ${b.id}` } })).statusCode, 401);
  });
});
