// The self-hosting plan `unlimited` over HTTP: real store and app, the clock injected (a variable the
// test moves), the SaaS plans made tiny through real configuration so that their limits are near.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mergePlans } from '../src/domain/plans.js';
import { ADMIN_TOKEN, createTenant, event, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let now = new Date('2026-03-10T12:00:00Z');
let t: TestApp;
before(async () => {
  t = await startTestApp({ now: () => now, plans: mergePlans({ starter: { monthly_events: 5, requests_per_minute: 3 }, trial: { requests_per_minute: 3 } }) });
});
after(async () => t.close());

const HOUR = 3_600_000;
const admin = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) });

describe('plan unlimited', () => {
  it('POST /admin/v1/tenants creates it; GET shows it accepting with no allotment and account context on', async () => {
    const res = await admin('POST', '/admin/v1/tenants', { name: 'self-hosted', plan: 'unlimited' });
    assert.equal(res.statusCode, 201, res.body);
    const { tenant } = res.json();
    assert.equal(tenant.plan, 'unlimited');
    const shown = (await admin('GET', `/admin/v1/tenants/${tenant.id}`)).json();
    assert.equal(shown.plan, 'unlimited');
    assert.equal(shown.billing_state, 'accepting');
    assert.equal(shown.trial_ends_at, null);
    assert.equal(shown.account_context_enabled, true);
    assert.equal(shown.usage.allotment, null);
    assert.equal(shown.usage.overage, 0);
  });

  it('is never rate limited, where a trial tenant gets 429', async () => {
    const trial = await tenantWithProduct(t.app, 'trial');
    const unlimited = await tenantWithProduct(t.app, 'unlimited');
    const trialCodes = [];
    const unlimitedCodes = [];
    for (let i = 0; i < 12; i++) {
      trialCodes.push((await postEvents(t.app, trial.ingestKey, [event()])).statusCode);
      unlimitedCodes.push((await postEvents(t.app, unlimited.ingestKey, [event()])).statusCode);
    }
    assert.ok(trialCodes.includes(429), 'the trial tenant reaches its limit');
    assert.deepEqual(new Set(unlimitedCodes), new Set([200]));
  });

  it('is never blocked: past any allotment, a year after cancellation, and an upgrade from a blocked starter accepts at once', async () => {
    const tenant = await tenantWithProduct(t.app, 'starter');
    assert.equal(
      (
        await postEvents(
          t.app,
          tenant.ingestKey,
          Array.from({ length: 6 }, () => event()),
        )
      ).statusCode,
      200,
    );
    now = new Date(now.getTime() + 80 * HOUR);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 402, 'starter is blocked');
    assert.equal((await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'unlimited' })).statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);

    assert.equal((await admin('POST', `/admin/v1/tenants/${tenant.id}/subscription/cancel`)).statusCode, 200);
    now = new Date(now.getTime() + 365 * 24 * HOUR);
    assert.equal(
      (
        await postEvents(
          t.app,
          tenant.ingestKey,
          Array.from({ length: 20 }, () => event()),
        )
      ).statusCode,
      200,
    );
    const shown = (await admin('GET', `/admin/v1/tenants/${tenant.id}`)).json();
    assert.equal(shown.billing_state, 'accepting');
    assert.equal(shown.block_reason, null);
  });

  it('sees the account and license views', async () => {
    const tenant = await createTenant(t.app, 'unlimited');
    for (const url of ['/v1/accounts', '/v1/licenses', '/v1/accounts/coverage']) {
      assert.equal((await get(t.app, tenant.adminKey, url)).statusCode, 200, url);
    }
    assert.equal((await get(t.app, tenant.ingestKey, '/v1/accounts')).statusCode, 403, 'the permission still applies');
  });

  it('the OpenAPI document lists it among the plans', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    assert.match(JSON.stringify(doc), /"unlimited"/);
  });
});
