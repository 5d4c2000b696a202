// Version registration, update, the `latest` selector and strict version mode, over app.inject
// against a real store; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, createTenant, event, get, judge, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const send = (method: 'POST' | 'PATCH' | 'DELETE', url: string, key: string, payload?: object) =>
  t.app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload ? { payload } : {}) });
const register = (key: string, body: object) => send('POST', '/v1/version-registrations', key, body);
const strict = (key: string, on: boolean) => send('PATCH', '/v1/products/app', key, { strict_versions_enabled: on });

describe('POST /v1/version-registrations', () => {
  it('(none) → active: 201 with id, product, product_version, release_date, created_at', async () => {
    const tenant = await tenantWithProduct(t.app);
    const res = await register(tenant.adminKey, { product: 'app', product_version: '1.2.3', release_date: '2026-03-01' });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'id', 'product', 'product_version', 'release_date']);
    assert.equal(body.product, 'app');
    assert.equal(body.product_version, '1.2.3');
    assert.equal(body.release_date, '2026-03-01');
    const listed = (await get(t.app, tenant.adminKey, '/v1/products/app/versions')).json().data[0];
    assert.equal(listed.status, 'active');
    assert.equal(listed.source, 'registered');
    const nullDate = await register(tenant.adminKey, { product: 'app', product_version: '1.2.4', release_date: null });
    assert.equal(nullDate.statusCode, 201);
    assert.equal(nullDate.json().release_date, null);
  });

  it('400 validation_error for a missing or malformed field, naming it', async () => {
    const tenant = await tenantWithProduct(t.app);
    const cases: [object, string][] = [
      [{ product_version: '1' }, 'product'],
      [{ product: 'app' }, 'product_version'],
      [{ product: 'app', product_version: 'x'.repeat(129) }, 'product_version'],
      [{ product: 'app', product_version: '1', release_date: '2026-02-30' }, 'release_date'],
      [{ product: 'app', product_version: '1', release_date: '01/02/2026' }, 'release_date'],
      [{ product: 'app', product_version: 7 }, 'product_version'],
    ];
    for (const [body, field] of cases) {
      const res = await register(tenant.adminKey, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().code, 'validation_error');
      assert.ok(
        res.json().errors.some((e: { field: string }) => e.field === field),
        `${JSON.stringify(body)} → ${res.body}`,
      );
    }
    assert.equal((await register(tenant.adminKey, { product: 'app', product_version: 'é'.repeat(128) })).statusCode, 201);
  });

  it('403 forbidden without manage_products; 404 product_not_found; 409 version_already_registered; 409 product_deleting', async () => {
    const tenant = await tenantWithProduct(t.app);
    const forbidden = await register(tenant.ingestKey, { product: 'app', product_version: '1' });
    assert.equal(forbidden.statusCode, 403);
    assert.equal(forbidden.json().code, 'forbidden');
    const missing = await register(tenant.adminKey, { product: 'ghost', product_version: '1' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'product_not_found');
    assert.equal((await register(tenant.adminKey, { product: 'app', product_version: '1' })).statusCode, 201);
    const again = await register(tenant.adminKey, { product: 'app', product_version: '1' });
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().code, 'version_already_registered');
    // An auto-registered pair exists too.
    await postEvents(t.app, tenant.ingestKey, [event({ product_version: '2' })]);
    assert.equal((await register(tenant.adminKey, { product: 'app', product_version: '2' })).json().code, 'version_already_registered');
    await send('DELETE', '/v1/products/app', tenant.adminKey);
    const deleting = await register(tenant.adminKey, { product: 'app', product_version: '3' });
    assert.equal(deleting.statusCode, 409);
    assert.equal(deleting.json().code, 'product_deleting');
  });

  it("another tenant's product is product_not_found", async () => {
    const a = await tenantWithProduct(t.app);
    const b = await createTenant(t.app);
    assert.equal((await register(b.adminKey, { product: 'app', product_version: '1' })).json().code, 'product_not_found');
    assert.equal((await register(b.adminKey, { product: a.productId, product_version: '1' })).json().code, 'product_not_found');
  });
});

describe('PATCH /v1/products/{productId}/versions/{versionId}', () => {
  it('sets and changes release_date; null or absent leaves it; status archived and back', async () => {
    const tenant = await tenantWithProduct(t.app);
    const v = (await register(tenant.adminKey, { product: 'app', product_version: '1.0.0' })).json();
    const url = `/v1/products/${tenant.productId}/versions/${v.id}`;
    assert.equal((await send('PATCH', url, tenant.adminKey, { release_date: '2026-01-01' })).json().release_date, '2026-01-01');
    assert.equal((await send('PATCH', url, tenant.adminKey, { release_date: '2026-02-01' })).json().release_date, '2026-02-01');
    assert.equal((await send('PATCH', url, tenant.adminKey, { release_date: null })).json().release_date, '2026-02-01');
    const archived = (await send('PATCH', url, tenant.adminKey, { status: 'archived' })).json();
    assert.equal(archived.status, 'archived');
    assert.equal(archived.release_date, '2026-02-01');
    assert.equal((await send('PATCH', url, tenant.adminKey, { status: 'active' })).json().status, 'active');
    assert.equal((await send('PATCH', url, tenant.adminKey, { status: 'deleted' })).statusCode, 400);
    assert.equal((await send('PATCH', url, tenant.ingestKey, { status: 'archived' })).statusCode, 403);
  });

  it('the versions list filters by status; unknown parameters on the management lists are a 400 naming them', async () => {
    const tenant = await tenantWithProduct(t.app);
    const ids: string[] = [];
    for (const version of ['1.0.0', '1.1.0', '2.0.0']) ids.push((await register(tenant.adminKey, { product: 'app', product_version: version })).json().id);
    await send('PATCH', `/v1/products/app/versions/${ids[1]}`, tenant.adminKey, { status: 'archived' });
    const list = async (query: string) => (await get(t.app, tenant.adminKey, `/v1/products/app/versions${query}`)).json();
    assert.deepEqual(
      (await list('?status=archived')).data.map((v: { product_version: string }) => v.product_version),
      ['1.1.0'],
    );
    assert.deepEqual(
      (await list('?status=active&limit=1')).data.map((v: { product_version: string }) => v.product_version),
      ['1.0.0'],
    );
    assert.equal((await list('')).data.length, 3);
    for (const [url, key] of [
      ['/v1/products/app/versions?state=archived', tenant.adminKey],
      ['/v1/products/app/versions?status=deleted', tenant.adminKey],
      ['/v1/products?foo=bar', tenant.adminKey],
      ['/admin/v1/tenants?foo=bar', ADMIN_TOKEN],
    ] as const) {
      const res = await get(t.app, key, url);
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.equal(res.json().code, 'validation_error');
    }
  });

  it("BAD-INPUTS 35: A's productId with B's versionId is 404, as is B's pair seen from A", async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    const vb = (await register(b.adminKey, { product: 'app', product_version: '1' })).json();
    const va = (await register(a.adminKey, { product: 'app', product_version: '1' })).json();
    const mixed = await send('PATCH', `/v1/products/${a.productId}/versions/${vb.id}`, a.adminKey, { status: 'archived' });
    assert.equal(mixed.statusCode, 404);
    const foreign = await send('PATCH', `/v1/products/${b.productId}/versions/${vb.id}`, a.adminKey, { status: 'archived' });
    assert.equal(foreign.statusCode, 404);
    const missing = await send('PATCH', `/v1/products/${a.productId}/versions/01a1fcd1-0000-7000-8000-000000000000`, a.adminKey, { status: 'archived' });
    assert.equal(missing.statusCode, 404);
    // A foreign version looks exactly like a missing version; a foreign product like a missing product.
    assert.equal(mixed.json().code, missing.json().code);
    assert.equal(foreign.json().code, 'product_not_found');
    assert.equal((await get(t.app, b.adminKey, '/v1/products/app/versions')).json().data[0].status, 'active');
    assert.equal((await send('PATCH', `/v1/products/${a.productId}/versions/${va.id}`, a.adminKey, { status: 'archived' })).statusCode, 200);
  });
});

describe('the version selector `latest`', () => {
  it('picks by semver precedence, then release_date, then created_at', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const v of ['1.9.0', '1.10.0', '1.10.0-beta.1', 'nightly']) await register(tenant.adminKey, { product: 'app', product_version: v });
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app/versions/latest')).json().product_version, '1.10.0');
    // v-prefixed equal precedence: release_date breaks the tie.
    await register(tenant.adminKey, { product: 'app', product_version: 'v1.10.0', release_date: '2026-05-01' });
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app/versions/latest')).json().product_version, 'v1.10.0');
    const none = await tenantWithProduct(t.app);
    assert.equal((await get(t.app, none.adminKey, '/v1/products/app/versions/latest')).statusCode, 404);
  });

  it('versions that are not semver, registered by one batch at the same instant, compare numerically', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = ['1.0', '2.0', '1.10', '1.9'].map((v) => event({ product_version: v }));
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/products/app/versions/latest')).json().product_version, '2.0');
  });
});

describe('strict version mode (every row of the state tables)', () => {
  it('off → on: unregistered and archived versions are rejected UNREGISTERED_VERSION from then on; registered active ones pass', async () => {
    const tenant = await tenantWithProduct(t.app);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '0.9' }))).status, 'accepted', 'before: auto-registered');
    const on = await strict(tenant.adminKey, true);
    assert.equal(on.json().strict_versions_enabled, true);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }))).reason, 'UNREGISTERED_VERSION');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '0.9' }))).status, 'accepted', 'auto-registered earlier: active');
    const v = (await register(tenant.adminKey, { product: 'app', product_version: '1.0' })).json();
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }))).status, 'accepted');
    // active → archived: strict ingestion rejects it; archived → active: resumes.
    await send('PATCH', `/v1/products/app/versions/${v.id}`, tenant.adminKey, { status: 'archived' });
    const archived = await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }));
    assert.equal(archived.reason, 'UNREGISTERED_VERSION');
    assert.match(archived.message!, /archived/);
    await send('PATCH', `/v1/products/app/versions/${v.id}`, tenant.adminKey, { status: 'active' });
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }))).status, 'accepted');
  });

  it('on → off applies immediately; archived versions pass again when strict mode is off', async () => {
    const tenant = await tenantWithProduct(t.app);
    const v = (await register(tenant.adminKey, { product: 'app', product_version: '1.0' })).json();
    await send('PATCH', `/v1/products/app/versions/${v.id}`, tenant.adminKey, { status: 'archived' });
    await strict(tenant.adminKey, true);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }))).reason, 'UNREGISTERED_VERSION');
    await strict(tenant.adminKey, false);
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '1.0' }))).status, 'accepted');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: '5.0' }))).status, 'accepted');
  });

  it('is not retroactive: events accepted before the switch stay stored', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event({ product_version: 'old' })]);
    await strict(tenant.adminKey, true);
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(row!.n, 1);
  });

  it('a retry of an accepted event stays accepted (duplicate) after its version was archived under strict mode; no dead letter', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sent = event({ product_version: '9.0.0' });
    const first = await postEvents(t.app, tenant.ingestKey, [sent]);
    assert.equal(first.statusCode, 200);
    const version = (await get(t.app, tenant.adminKey, '/v1/products/app/versions'))
      .json()
      .data.find((v: { product_version: string }) => v.product_version === '9.0.0');
    await send('PATCH', `/v1/products/app/versions/${version.id}`, tenant.adminKey, { status: 'archived' });
    await strict(tenant.adminKey, true);
    // The retry, beside a new event of the same archived version, which is refused.
    const retry = await postEvents(t.app, tenant.ingestKey, [sent, event({ product_version: '9.0.0' })]);
    assert.equal(retry.statusCode, 207);
    const [again, fresh] = retry.json().results;
    assert.deepEqual([again.status, again.duplicate], ['accepted', true]);
    assert.equal(fresh.reason, 'UNREGISTERED_VERSION');
    assert.deepEqual([retry.json().accepted, retry.json().rejected], [1, 1]);
    const alone = await postEvents(t.app, tenant.ingestKey, [sent]);
    assert.deepEqual([alone.statusCode, alone.json().results[0].duplicate], [200, true]);
    const [stored] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(stored!.n, 1);
    const [dead] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM invalid_events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(dead!.n, 1, 'only the new event is a dead letter');
  });

  it('a repeat of a stored exception, session start or identify stays accepted after its version was archived under strict mode; a new one is refused', async () => {
    const tenant = await tenantWithProduct(t.app);
    const post = (url: string, payload: object) => send('POST', url, tenant.ingestKey, payload);
    const common = { product: 'app', product_version: '7.0.0' };
    const exception = {
      ...common,
      exception_id: 'x-1',
      exception_type: 'TypeError',
      severity: 'fatal',
      message: 'boom',
      occurred_at: '2026-03-01T10:00:00Z',
      actor_id: 'u1',
    };
    const start = { ...common, session_id: '00000000-0000-4000-8000-0000000000a1', actor_id: 'u1', started_at: '2026-03-01T10:00:00Z' };
    const link = { ...common, anonymous_actor_id: 'anon-1', identified_actor_id: 'u1' };
    const first = await post('/v1/events/exceptions', exception);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal((await post('/v1/events/sessions', start)).statusCode, 200);
    assert.equal((await post('/v1/actors/identify', link)).statusCode, 200);
    const version = (await get(t.app, tenant.adminKey, '/v1/products/app/versions'))
      .json()
      .data.find((v: { product_version: string }) => v.product_version === '7.0.0');
    await send('PATCH', `/v1/products/app/versions/${version.id}`, tenant.adminKey, { status: 'archived' });
    await strict(tenant.adminKey, true);
    const again = await post('/v1/events/exceptions', exception);
    assert.deepEqual([again.statusCode, again.json().fingerprint], [200, first.json().fingerprint]);
    assert.equal((await post('/v1/events/sessions', start)).statusCode, 200);
    assert.equal((await post('/v1/actors/identify', link)).statusCode, 200);
    // New records of the archived version are refused, and so is a link to another user.
    assert.equal((await post('/v1/events/exceptions', { ...exception, exception_id: 'x-2' })).json().code, 'UNREGISTERED_VERSION');
    assert.equal((await post('/v1/events/sessions', { ...start, session_id: '00000000-0000-4000-8000-0000000000a2' })).json().code, 'UNREGISTERED_VERSION');
    assert.equal((await post('/v1/actors/identify', { ...link, identified_actor_id: 'u2' })).json().code, 'UNREGISTERED_VERSION');
  });

  it('BAD-INPUTS 31: strict mode toggled while batches are in flight: each event judged once, never retroactively', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batches = Array.from({ length: 20 }, (_, i) => Array.from({ length: 50 }, () => event({ product_version: `v${i}` })));
    const sent = batches.map((b) => postEvents(t.app, tenant.ingestKey, b));
    await strict(tenant.adminKey, true);
    const answers = await Promise.all(sent);
    let accepted = 0;
    for (const res of answers) {
      const body = res.json();
      assert.equal(body.results.length, 50);
      // One verdict per batch: the strict flag is read once per batch.
      assert.ok(body.accepted === 50 || body.rejected === 50, `mixed verdicts in one batch: ${body.accepted}/${body.rejected}`);
      for (const r of body.results) if (r.status === 'rejected') assert.equal(r.reason, 'UNREGISTERED_VERSION');
      accepted += body.accepted;
    }
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(row!.n, accepted, 'stored exactly what was acknowledged as accepted');
    assert.equal((await judge(t.app, tenant.ingestKey, event({ product_version: 'later' }))).reason, 'UNREGISTERED_VERSION');
  });
});
