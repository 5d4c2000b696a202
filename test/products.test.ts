// Products and versions over app.inject against a real store; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, event, get, judge, post, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const call = (method: 'POST' | 'PATCH' | 'DELETE', url: string, key: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('products', () => {
  it('creates, lists, gets by id and by slug, and refuses a second product with the same slug', async () => {
    const tenant = await createTenant(t.app);
    const created = await call('POST', '/v1/products', tenant.adminKey, { slug: 'desktop', name: 'Desktop app' });
    assert.equal(created.statusCode, 201);
    const p = created.json();
    assert.equal(p.slug, 'desktop');
    assert.equal(p.name, 'Desktop app');
    assert.equal(p.status, 'active');
    assert.equal(p.strict_versions_enabled, false);
    assert.deepEqual((await get(t.app, tenant.adminKey, `/v1/products/${p.id}`)).json(), p);
    assert.deepEqual((await get(t.app, tenant.adminKey, '/v1/products/desktop')).json(), p);
    const dup = await call('POST', '/v1/products', tenant.adminKey, { slug: 'desktop' });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().code, 'product_exists');
    const list = (await get(t.app, tenant.adminKey, '/v1/products')).json();
    assert.deepEqual(list, { data: [p], next_cursor: null });
  });

  it('validates the body with problem+json naming the field', async () => {
    const tenant = await createTenant(t.app);
    const res = await call('POST', '/v1/products', tenant.adminKey, { name: 'no slug' });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'validation_error');
    assert.equal(res.json().errors[0].field, 'slug');
    const typed = await call('PATCH', '/v1/products/x', tenant.adminKey, { strict_versions_enabled: 'yes' });
    assert.equal(typed.statusCode, 400);
    assert.equal(typed.json().errors[0].field, 'strict_versions_enabled');
  });

  it('paginates with a stable cursor', async () => {
    const tenant = await createTenant(t.app);
    for (let i = 0; i < 5; i++) await call('POST', '/v1/products', tenant.adminKey, { slug: `p${i}` });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { slug: string }[]; next_cursor: string | null } = (
        await get(t.app, tenant.adminKey, `/v1/products?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((p) => p.slug));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, ['p0', 'p1', 'p2', 'p3', 'p4']);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products?cursor=garbage')).statusCode, 400);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products?limit=501')).statusCode, 400);
  });

  it('PATCH stores strict_versions_enabled only when supplied and returns it', async () => {
    const tenant = await tenantWithProduct(t.app);
    const on = await call('PATCH', '/v1/products/app', tenant.adminKey, { strict_versions_enabled: true });
    assert.equal(on.statusCode, 200);
    assert.equal(on.json().strict_versions_enabled, true);
    const untouched = await call('PATCH', `/v1/products/${tenant.productId}`, tenant.adminKey, { name: 'Renamed' });
    assert.equal(untouched.json().strict_versions_enabled, true);
    assert.equal(untouched.json().name, 'Renamed');
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app')).json().strict_versions_enabled, true);
  });

  it('DELETE answers 202 and puts the product in deleting; its events are then UNRECOGNIZED_PRODUCT', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.equal((await judge(t.app, tenant.ingestKey, event())).status, 'accepted');
    const res = await call('DELETE', '/v1/products/app', tenant.adminKey);
    assert.equal(res.statusCode, 202);
    assert.equal(res.json().status, 'deleting');
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app')).json().status, 'deleting');
    const r = await judge(t.app, tenant.ingestKey, event());
    assert.equal(r.reason, 'UNRECOGNIZED_PRODUCT');
  });
});

describe('versions', () => {
  it('auto-registers an unknown version on first sight when strict mode is off', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event({ product_version: '2.0.0' }), event({ product_version: '2.0.0' }), event({ product_version: '2.1.0' })]);
    const versions = (await get(t.app, tenant.adminKey, `/v1/products/${tenant.productId}/versions`)).json().data;
    assert.deepEqual(versions.map((v: { product_version: string }) => v.product_version).sort(), ['2.0.0', '2.1.0']);
    for (const v of versions) {
      assert.equal(v.status, 'active');
      assert.equal(v.source, 'auto');
      assert.equal(v.product, 'app');
      assert.equal(v.release_date, null);
      assert.ok(v.first_seen && v.last_seen && v.created_at && v.id);
    }
  });

  it('a registered version gets first_seen and last_seen from the first event on it (null before)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const reg = await post(t.app, tenant.adminKey, '/v1/version-registrations', { product: 'app', product_version: '3.0.0' });
    assert.equal(reg.statusCode, 201, reg.body);
    const seen = async () => {
      const v = (await get(t.app, tenant.adminKey, `/v1/products/${tenant.productId}/versions`)).json().data[0];
      return [v.first_seen, v.last_seen];
    };
    assert.deepEqual(await seen(), [null, null]);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ product_version: '3.0.0' })])).statusCode, 200);
    // Moved after the batch's commit, off its answer's path.
    for (let i = 0; i < 50 && (await seen())[0] === null; i++) await new Promise((r) => setTimeout(r, 20));
    const [first, last] = await seen();
    assert.ok(first && last && first === last, `${first} ${last}`);
  });

  it('events strict mode refuses on an archived version leave its first_seen and last_seen as they were', async () => {
    const tenant = await tenantWithProduct(t.app);
    const reg = await post(t.app, tenant.adminKey, '/v1/version-registrations', { product: 'app', product_version: '0.9' });
    assert.equal(reg.statusCode, 201, reg.body);
    assert.equal((await call('PATCH', `/v1/products/app/versions/${reg.json().id}`, tenant.adminKey, { status: 'archived' })).statusCode, 200);
    await call('PATCH', '/v1/products/app', tenant.adminKey, { strict_versions_enabled: true });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '0.9' }))).reason, 'UNREGISTERED_VERSION');
    // An admitted event on another version, after it: its touch has landed once that version shows it.
    await post(t.app, tenant.adminKey, '/v1/version-registrations', { product: 'app', product_version: '1.0' });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }))).status, 'accepted');
    const versions = async () =>
      (await get(t.app, tenant.adminKey, '/v1/products/app/versions')).json().data as { product_version: string; first_seen: string | null }[];
    for (let i = 0; i < 50 && (await versions()).find((v) => v.product_version === '1.0')?.first_seen === null; i++)
      await new Promise((r) => setTimeout(r, 20));
    const seen = Object.fromEntries((await versions()).map((v) => [v.product_version, v.first_seen]));
    assert.ok(seen['1.0'], JSON.stringify(seen));
    assert.equal(seen['0.9'], null);
  });

  it('BAD-INPUTS 30: 50 concurrent batches that all carry one new version make exactly one version row', async () => {
    const tenant = await tenantWithProduct(t.app);
    const results = await Promise.all(Array.from({ length: 50 }, () => postEvents(t.app, tenant.ingestKey, [event({ product_version: '7.7.7' })])));
    assert.ok(results.every((r) => r.statusCode === 200));
    const [row] = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM product_versions WHERE product_id = $1 AND version = '7.7.7'", [
      tenant.productId,
    ]);
    assert.equal(row!.n, 1);
  });

  it('strict mode on: an unregistered version is rejected UNREGISTERED_VERSION and not registered; off again: accepted', async () => {
    const tenant = await tenantWithProduct(t.app);
    await call('PATCH', '/v1/products/app', tenant.adminKey, { strict_versions_enabled: true });
    const res = await postEvents(t.app, tenant.ingestKey, [event({ product_version: '3.0.0' }), event({ product_version: '3.0.0', product: 'app' })]);
    assert.equal(res.statusCode, 207);
    assert.deepEqual(
      res.json().results.map((r: { reason: string }) => r.reason),
      ['UNREGISTERED_VERSION', 'UNREGISTERED_VERSION'],
    );
    assert.deepEqual((await get(t.app, tenant.adminKey, '/v1/products/app/versions')).json().data, []);
    await call('PATCH', '/v1/products/app', tenant.adminKey, { strict_versions_enabled: false });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '3.0.0' }))).status, 'accepted');
  });
});
