// POST /v1/events over app.inject against a real store (PGlite, or PostgreSQL in CI); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countStored, event, get, judge, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

describe('POST /v1/events', () => {
  it('accepts a good batch with 200 and one result per element, in order', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = [event(), event(), event()];
    const res = await postEvents(t.app, tenant.ingestKey, batch);
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.accepted, 3);
    assert.equal(body.rejected, 0);
    assert.deepEqual(
      body.results,
      batch.map((e, index) => ({ index, event_id: e.event_id, status: 'accepted' })),
    );
    assert.equal(await countStored(t.db, tenant.id), 3);
  });

  it('answers 207 with good events stored when a neighbour is rejected, and keeps the dead letter', async () => {
    const tenant = await tenantWithProduct(t.app);
    const bad = event({ properties: { accountId: 'a-1' } });
    const res = await postEvents(t.app, tenant.ingestKey, [event(), bad, event()]);
    assert.equal(res.statusCode, 207);
    const body = res.json();
    assert.equal(body.accepted, 2);
    assert.equal(body.rejected, 1);
    assert.equal(body.results[1].status, 'rejected');
    assert.equal(body.results[1].reason, 'reserved_property_key');
    assert.equal(body.results[1].event_id, bad.event_id);
    assert.match(body.results[1].message, /accountId/);
    assert.equal(await countStored(t.db, tenant.id), 2);
    const dl = (await get(t.app, tenant.adminKey, '/v1/invalid-events')).json();
    assert.equal(dl.data.length, 1);
    assert.equal(dl.data[0].reason, 'reserved_property_key');
    assert.equal(dl.data[0].kind, 'event');
    assert.equal(dl.data[0].product, 'app');
    assert.deepEqual(dl.data[0].payload, bad);
  });

  it('answers 207 when every event is rejected', async () => {
    const tenant = await tenantWithProduct(t.app);
    const res = await postEvents(t.app, tenant.ingestKey, [event({ product: 'nope' }), event({ product: 'nope' })]);
    assert.equal(res.statusCode, 207);
    assert.deepEqual(
      res.json().results.map((r: { reason: string }) => r.reason),
      ['UNRECOGNIZED_PRODUCT', 'UNRECOGNIZED_PRODUCT'],
    );
    assert.equal(await countStored(t.db, tenant.id), 0);
  });

  it('reads the legacy source_app / source_version names', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { product: _p, product_version: _v, ...rest } = event();
    const r = await judge(t.app, tenant.ingestKey, { ...rest, source_app: 'app', source_version: '0.9.1' });
    assert.equal(r.status, 'accepted');
    const [row] = await t.db.query<{ product_version: string }>('SELECT product_version FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(row!.product_version, '0.9.1');
    const versions = (await get(t.app, tenant.adminKey, '/v1/products/app/versions')).json();
    assert.deepEqual(
      versions.data.map((v: { product_version: string; source: string }) => [v.product_version, v.source]),
      [['0.9.1', 'auto']],
    );
  });

  it('records schema_version as sent, without validating it', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ schema_version: 'whatever-2' }))).status, 'accepted');
    const [row] = await t.db.query<{ schema_version: string; received_at: Date }>('SELECT schema_version, received_at FROM events WHERE tenant_id = $1', [
      tenant.id,
    ]);
    assert.equal(row!.schema_version, 'whatever-2');
    assert.ok(row!.received_at instanceof Date);
  });

  it('stores properties, account and license as sent', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = event({ account_id: 'acme', license_id: 'LIC-1', session_id: '0190a0a0-0000-7000-8000-00000000abcd', properties: { a: 'x', n: 1.5, b: false } });
    assert.equal((await judge(t.app, tenant.ingestKey, e)).status, 'accepted');
    const [row] = await t.db.query<Record<string, unknown>>('SELECT account_id, license_id, session_id, properties FROM events WHERE tenant_id = $1', [
      tenant.id,
    ]);
    assert.deepEqual(row, {
      account_id: 'acme',
      license_id: 'LIC-1',
      session_id: '0190a0a0-0000-7000-8000-00000000abcd',
      properties: { a: 'x', n: 1.5, b: false },
    });
  });
});

describe('rejection precedence (CONTRACT.md)', () => {
  it('event_too_large beats invalid_event', async () => {
    const tenant = await tenantWithProduct(t.app);
    const r = await judge(t.app, tenant.ingestKey, event({ category: 123, padding: 'x'.repeat(5000) }));
    assert.equal(r.reason, 'event_too_large');
  });
  it('invalid_event beats reserved_property_key', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ name: undefined, properties: { account: 'x' } }))).reason, 'invalid_event');
  });
  it('reserved_property_key beats invalid_account_id, which beats invalid_license_id', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ account_id: ' ', properties: { license: 'x' } }))).reason, 'reserved_property_key');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ account_id: ' ', license_id: '' }))).reason, 'invalid_account_id');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ license_id: '' }))).reason, 'invalid_license_id');
  });
  it('invalid_license_id beats UNRECOGNIZED_PRODUCT, which beats UNREGISTERED_VERSION', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ license_id: '', product: 'nope' }))).reason, 'invalid_license_id');
    await t.app.inject({
      method: 'PATCH',
      url: '/v1/products/app',
      headers: { authorization: `Bearer ${tenant.adminKey}` },
      payload: { strict_versions_enabled: true },
    });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product: 'nope', product_version: '9.9.9' }))).reason, 'UNRECOGNIZED_PRODUCT');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '9.9.9' }))).reason, 'UNREGISTERED_VERSION');
  });
});
