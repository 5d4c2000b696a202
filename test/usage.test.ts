// GET /v1/usage, the tenant's own usage and billing state, over HTTP (app.inject) on a real store;
// the clock is injected and the plans are real configuration with small allotments.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mergePlans } from '../src/domain/plans.js';
import { ADMIN_TOKEN, createProduct, createTenant, event, get, postEvents, startTestApp, type TestApp } from './helpers/app.js';

let now = new Date('2026-03-10T12:00:00Z');
let t: TestApp;
before(async () => {
  t = await startTestApp({
    now: () => now,
    plans: mergePlans({ starter: { monthly_events: 3 } }),
    env: { QUOTA_GRACE_HOURS: '72', CANCEL_GRACE_HOURS: '168', TRIAL_DAYS: '21' },
  });
});
after(async () => t.close());

const HOUR = 3_600_000;

async function keyWith(tenantId: string, permissions: string[]): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/tenants/${tenantId}/keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { permissions, name: permissions.join('-') },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().key;
}

describe('GET /v1/usage', () => {
  it('without a key is a 401; a key without read is a 403; an unknown parameter is a 400 naming it', async () => {
    const tenant = await createTenant(t.app, 'business');
    const none = await t.app.inject({ method: 'GET', url: '/v1/usage' });
    assert.equal(none.statusCode, 401);
    assert.equal(none.json().code, 'unauthorized');
    const ingestOnly = await get(t.app, tenant.ingestKey, '/v1/usage');
    assert.equal(ingestOnly.statusCode, 403);
    const odd = await get(t.app, tenant.adminKey, '/v1/usage?tenant=other');
    assert.equal(odd.statusCode, 400);
    assert.match(odd.body, /"field":"tenant"/);
  });

  it('a read key sees the events of this cycle against the allotment, the plan and its policy, the same numbers the operator sees', async () => {
    const tenant = await createTenant(t.app, 'business');
    await createProduct(t.app, tenant.adminKey, 'app');
    // 4 new events and one duplicate of the first: usage counts accepted new events only, so 4.
    const batch = Array.from({ length: 4 }, () => event());
    assert.equal((await postEvents(t.app, tenant.ingestKey, [...batch, batch[0]])).statusCode, 200);
    const readKey = await keyWith(tenant.id, ['read']);
    const res = await get(t.app, readKey, '/v1/usage');
    assert.equal(res.statusCode, 200, res.body);
    const u = res.json();
    assert.deepEqual(
      { plan: u.plan, policy: u.policy, billing_state: u.billing_state, block_reason: u.block_reason, trial_ends_at: u.trial_ends_at },
      { plan: 'business', policy: 'charge', billing_state: 'accepting', block_reason: null, trial_ends_at: null },
    );
    // Created on 2026-03-10 12:00: the cycle runs from then to the same instant a month later.
    assert.deepEqual(u.usage, {
      period_start: '2026-03-10T12:00:00.000Z',
      period_end: '2026-04-10T12:00:00.000Z',
      events: 4,
      allotment: 10_000_000,
      overage: 0,
    });
    assert.equal(u.quota_grace_hours, 72);
    assert.equal(u.cancel_grace_hours, 168);
    const operator = await t.app.inject({ method: 'GET', url: `/admin/v1/tenants/${tenant.id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.deepEqual(u.usage, operator.json().usage);
    // Another tenant's usage is its own.
    const other = await createTenant(t.app, 'business');
    assert.equal((await get(t.app, other.adminKey, '/v1/usage')).json().usage.events, 0);
  });

  it('a cap plan past its allotment and grace period says blocked, quota_exhausted', async () => {
    now = new Date('2026-03-10T12:00:00Z');
    const tenant = await createTenant(t.app, 'starter');
    await createProduct(t.app, tenant.adminKey, 'app');
    // Allotment 3 (the plans above): 3 events reach it; the grace period is 72 h from then.
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event(), event(), event()])).statusCode, 200);
    let u = (await get(t.app, tenant.adminKey, '/v1/usage')).json();
    assert.deepEqual([u.policy, u.billing_state, u.usage.events, u.usage.allotment], ['cap', 'accepting', 3, 3]);
    now = new Date(now.getTime() + 73 * HOUR);
    u = (await get(t.app, tenant.adminKey, '/v1/usage')).json();
    assert.deepEqual([u.billing_state, u.block_reason], ['blocked', 'quota_exhausted']);
    now = new Date('2026-03-10T12:00:00Z');
  });

  it('a trial shows when it ends; the unlimited plan has no allotment and no policy', async () => {
    const trial = await createTenant(t.app, 'trial');
    const u = (await get(t.app, trial.adminKey, '/v1/usage')).json();
    // TRIAL_DAYS 21 from 2026-03-10 12:00.
    assert.equal(u.trial_ends_at, '2026-03-31T12:00:00.000Z');
    const unlimited = await createTenant(t.app, 'unlimited');
    const v = (await get(t.app, unlimited.adminKey, '/v1/usage')).json();
    assert.deepEqual([v.plan, v.policy, v.usage.allotment, v.billing_state], ['unlimited', null, null, 'accepting']);
  });
});
