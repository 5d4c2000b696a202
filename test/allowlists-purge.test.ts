// Allowlists and the product purge job over app.inject against a real store; the purge job is run
// directly (runJob: startJobs(...).runOnce) instead of waiting for its timer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { productPurgeJob } from '../src/jobs/product-purge.js';
import { createTenant, event, foldReadModel, get, judge, postEvents, runJob, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const send = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, key: string, payload?: object) =>
  t.app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload ? { payload } : {}) });

describe('allowlists', () => {
  it('is off by default; when on, events outside it are ALLOWLIST_REJECTED, with * wildcards', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.deepEqual((await get(t.app, tenant.adminKey, '/v1/products/app/allowlist')).json(), { enabled: false, rules: [] });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ category: 'x', name: 'y' }))).status, 'accepted');
    const put = await send('PUT', '/v1/products/app/allowlist', tenant.adminKey, {
      enabled: true,
      rules: [
        { category: 'ui', name: 'click' },
        { category: 'checkout', name: '*' },
        { category: '*', name: 'app_*' },
      ],
    });
    assert.equal(put.statusCode, 200);
    assert.equal(put.json().enabled, true);
    const verdicts = await postEvents(t.app, tenant.ingestKey, [
      event({ category: 'ui', name: 'click' }),
      event({ category: 'checkout', name: 'paid' }),
      event({ category: 'lifecycle', name: 'app_started' }),
      event({ category: 'ui', name: 'hover' }),
      event({ category: 'UI', name: 'click' }),
    ]);
    assert.equal(verdicts.statusCode, 207);
    assert.deepEqual(
      verdicts.json().results.map((r: { reason?: string }) => r.reason ?? 'ok'),
      ['ok', 'ok', 'ok', 'ALLOWLIST_REJECTED', 'ALLOWLIST_REJECTED'],
    );
    await send('PUT', '/v1/products/app/allowlist', tenant.adminKey, { enabled: false });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ category: 'ui', name: 'hover' }))).status, 'accepted');
  });

  it('is independent of strict mode, and comes before UNREGISTERED_VERSION in precedence', async () => {
    const tenant = await tenantWithProduct(t.app);
    await send('PUT', '/v1/products/app/allowlist', tenant.adminKey, { enabled: true, rules: [{ category: 'ui', name: 'click' }] });
    await send('PATCH', '/v1/products/app', tenant.adminKey, { strict_versions_enabled: true });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ category: 'ui', name: 'hover', product_version: 'nope' }))).reason, 'ALLOWLIST_REJECTED');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ category: 'ui', name: 'click', product_version: 'nope' }))).reason, 'UNREGISTERED_VERSION');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product: 'ghost', category: 'ui', name: 'hover' }))).reason, 'UNRECOGNIZED_PRODUCT');
  });

  it("imports the clients' event manifest", async () => {
    const tenant = await tenantWithProduct(t.app);
    const manifest = {
      schema_version: '1',
      generated_at: '2026-11-01T00:00:00Z',
      product: 'app',
      events: [
        { category: 'ui', name: 'click' },
        { category: 'ui', name: 'save' },
      ],
    };
    const res = await send('POST', '/v1/products/app/allowlist/import', tenant.adminKey, manifest);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      enabled: false,
      rules: [
        { category: 'ui', name: 'click' },
        { category: 'ui', name: 'save' },
      ],
    });
    await send('POST', '/v1/products/app/allowlist/import', tenant.adminKey, manifest); // again: no duplicates
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app/allowlist')).json().rules.length, 2);
    assert.equal((await send('POST', '/v1/products/app/allowlist/import', tenant.adminKey, { events: [{ category: 'ui' }] })).statusCode, 400);
  });

  it('needs manage_products to change, and is invisible to other tenants', async () => {
    const tenant = await tenantWithProduct(t.app);
    const other = await createTenant(t.app);
    assert.equal((await send('PUT', '/v1/products/app/allowlist', tenant.ingestKey, { enabled: true })).statusCode, 403);
    assert.equal((await send('PUT', `/v1/products/${tenant.productId}/allowlist`, other.adminKey, { enabled: true })).statusCode, 404);
    assert.equal((await get(t.app, other.adminKey, `/v1/products/${tenant.productId}/allowlist`)).statusCode, 404);
    assert.equal((await send('POST', `/v1/products/${tenant.productId}/allowlist/import`, other.adminKey, { events: [] })).statusCode, 404);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app/allowlist')).json().enabled, false);
  });
});

describe('product lifecycle: deleting → purged → gone', () => {
  it('purges the data of a deleting product in the background, then the product; other products stay', async () => {
    const tenant = await tenantWithProduct(t.app);
    await send('POST', '/v1/products', tenant.adminKey, { slug: 'keep' });
    await postEvents(
      t.app,
      tenant.ingestKey,
      Array.from({ length: 30 }, () => event()),
    );
    await postEvents(t.app, tenant.ingestKey, [event({ product: 'keep' })]);
    await send('POST', '/v1/events/sessions', tenant.ingestKey, {
      session_id: '01a1fcd1-0000-7000-8000-0000000000aa',
      actor_id: 'a',
      product: 'app',
      product_version: '1',
      started_at: '2026-01-01T00:00:00Z',
    });
    assert.equal((await send('DELETE', '/v1/products/app', tenant.adminKey)).statusCode, 202);
    await runJob(t.db, productPurgeJob());
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app')).statusCode, 404, 'the product is gone');
    const [events] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(events!.n, 1, "only the other product's event is left");
    const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE tenant_id = $1', [tenant.id]);
    assert.equal(sessions!.n, 0);
    const [versions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM product_versions WHERE product_id = $1', [tenant.productId]);
    assert.equal(versions!.n, 0);
    // The slug can be used again.
    assert.equal((await send('POST', '/v1/products', tenant.adminKey, { slug: 'app' })).statusCode, 201);
  });

  it("a purged product leaves the account views and coverage at the rollup job's next run", async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    await send('POST', '/v1/products', tenant.adminKey, { slug: 'keep' });
    const recent = new Date(Date.now() - 3_600_000).toISOString();
    await postEvents(t.app, tenant.ingestKey, [
      event({ account_id: 'acme', timestamp: recent }),
      event({ timestamp: recent }),
      event({ product: 'keep', account_id: 'acme', timestamp: recent }),
    ]);
    await foldReadModel(t.db);
    const views = async () => {
      const coverage = (await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).json();
      const acme = (await get(t.app, tenant.adminKey, '/v1/accounts')).json().data[0];
      return { events: coverage.events.total, missing: coverage.top_missing_sources.map((m: { product: string }) => m.product), acme: acme.events };
    };
    assert.deepEqual(await views(), { events: 3, missing: ['app', 'keep'], acme: 2 }); // keep's event has no license
    assert.equal((await send('DELETE', '/v1/products/app', tenant.adminKey)).statusCode, 202);
    await runJob(t.db, productPurgeJob());
    await foldReadModel(t.db);
    assert.deepEqual(await views(), { events: 1, missing: ['keep'], acme: 1 });
  });

  it('resumes after an interrupted run: a half-purged product is finished by the next run', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(
      t.app,
      tenant.ingestKey,
      Array.from({ length: 20 }, () => event()),
    );
    await send('DELETE', '/v1/products/app', tenant.adminKey);
    // A run that died after one small chunk: do one chunk by hand, as the job would have.
    const { purgeProductChunk } = await import('../src/storage/purge.js');
    assert.equal(await purgeProductChunk(t.db, tenant.id, tenant.productId, 7), 7);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app')).json().status, 'deleting');
    await runJob(t.db, productPurgeJob());
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app')).statusCode, 404);
    const [events] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(events!.n, 0);
  });
});
