// Billing over HTTP: 402 on every ingestion route, usage, upgrades, trials and cancellations.
// Real store and app; the clock is injected (a variable the test moves), and the plans are real
// configuration with small allotments.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mergePlans } from '../src/domain/plans.js';
import { ADMIN_TOKEN, countStored, event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let now = new Date('2026-03-10T12:00:00Z');
let t: TestApp;
before(async () => {
  t = await startTestApp({
    now: () => now,
    plans: mergePlans({ starter: { monthly_events: 5 }, pro: { monthly_events: 5 }, trial: { monthly_events: 1000 } }),
    env: { QUOTA_GRACE_HOURS: '72', CANCEL_GRACE_HOURS: '168', TRIAL_DAYS: '21' },
  });
});
after(async () => t.close());

const HOUR = 3_600_000;
const advance = (ms: number) => (now = new Date(now.getTime() + ms));
const admin = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) });
const tenantInfo = async (id: string) => (await admin('GET', `/admin/v1/tenants/${id}`)).json();

/** Every ingestion route, with a valid body. */
function ingestionCalls(key: string) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const at = now.toISOString();
  const sid = '01a1fcd1-0000-7000-8000-0000000000bb';
  return [
    { url: '/v1/events', payload: JSON.stringify([event()]) },
    { url: '/v1/events/sessions', payload: JSON.stringify({ session_id: sid, actor_id: 'a', product: 'app', product_version: '1', started_at: at }) },
    { url: '/v1/events/sessions/end', payload: JSON.stringify({ session_id: sid, ended_at: at }) },
    {
      url: '/v1/events/exceptions',
      payload: JSON.stringify({
        exception_id: 'x1',
        exception_type: 'E',
        severity: 'fatal',
        occurred_at: at,
        actor_id: 'a',
        product: 'app',
        product_version: '1',
      }),
    },
    {
      url: '/v1/actors/identify',
      payload: JSON.stringify({ anonymous_actor_id: 'anon', identified_actor_id: 'u', identified_at: at, product: 'app', product_version: null }),
    },
  ].map((c) => () => t.app.inject({ method: 'POST', url: c.url, headers, payload: c.payload }));
}

async function exhaust(key: string, n: number) {
  const res = await postEvents(
    t.app,
    key,
    Array.from({ length: n }, () => event()),
  );
  assert.equal(res.statusCode, 200);
}

describe('billing over HTTP', () => {
  it('BAD-INPUTS 40: a cap plan past its allotment keeps accepting through the grace period, then 402 on every ingestion route, nothing stored', async () => {
    const tenant = await tenantWithProduct(t.app, 'starter');
    await exhaust(tenant.ingestKey, 5);
    advance(71 * HOUR);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200, 'still within the 72 h grace');
    const stored = await countStored(t.db, tenant.id);
    advance(2 * HOUR);
    for (const call of ingestionCalls(tenant.ingestKey)) {
      const res = await call();
      assert.equal(res.statusCode, 402, res.body);
      const body = res.json();
      assert.equal(body.code, 'billing_blocked');
      assert.equal(body.reason, 'quota_exhausted');
      assert.ok(Date.parse(body.retry_at) > now.getTime(), 'clears at the next cycle');
      assert.ok(Number(res.headers['retry-after']) >= 1);
      assert.equal(res.headers['access-control-allow-origin'], '*');
    }
    assert.equal(await countStored(t.db, tenant.id), stored);
    const [dl] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM invalid_events WHERE tenant_id = $1', [tenant.id]);
    assert.equal(dl!.n, 0, 'a 402 leaves no dead letter');
    const info = await tenantInfo(tenant.id);
    assert.equal(info.billing_state, 'blocked');
    assert.equal(info.block_reason, 'quota_exhausted');
    assert.equal(info.usage.events, 6);
    assert.equal(info.usage.overage, 0, 'a cap plan has no billable overage');
  });

  it('decides 402 before reading the body', async () => {
    const tenant = await tenantWithProduct(t.app, 'starter');
    await exhaust(tenant.ingestKey, 5);
    advance(73 * HOUR);
    const res = await postEvents(t.app, tenant.ingestKey, 'not even json');
    assert.equal(res.statusCode, 402);
  });

  it('an upgrade from the blocked state accepts at once', async () => {
    const tenant = await tenantWithProduct(t.app, 'starter');
    await exhaust(tenant.ingestKey, 5);
    advance(73 * HOUR);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 402);
    const patched = await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'business' });
    assert.equal(patched.json().billing_state, 'accepting');
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
  });

  it('the next billing cycle clears a cap block', async () => {
    const tenant = await tenantWithProduct(t.app, 'starter');
    await exhaust(tenant.ingestKey, 5);
    advance(73 * HOUR);
    const blocked = await postEvents(t.app, tenant.ingestKey, [event()]);
    assert.equal(blocked.statusCode, 402);
    now = new Date(Date.parse(blocked.json().retry_at) + 1000);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
    assert.equal((await tenantInfo(tenant.id)).usage.events, 1, 'a new cycle counts from zero');
  });

  it('BAD-INPUTS 40: a charge plan past its allotment is still 200, and its overage is counted', async () => {
    const tenant = await tenantWithProduct(t.app, 'pro');
    await exhaust(tenant.ingestKey, 5);
    advance(200 * HOUR);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event(), event()])).statusCode, 200);
    const info = await tenantInfo(tenant.id);
    assert.equal(info.billing_state, 'accepting');
    assert.equal(info.usage.overage, 2);
  });

  it('the 21-day trial ends with 402 trial_expired (no Retry-After); converting to a paid plan accepts', async () => {
    const tenant = await tenantWithProduct(t.app, 'trial');
    advance(21 * 24 * HOUR - 1000);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
    advance(2000);
    const res = await postEvents(t.app, tenant.ingestKey, [event()]);
    assert.equal(res.statusCode, 402);
    assert.equal(res.json().reason, 'trial_expired');
    assert.equal(res.headers['retry-after'], undefined);
    await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'pro' });
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
  });

  it('a cancelled subscription accepts through its grace, then 402 subscription_cancelled; reactivation accepts', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const cancelled = (await admin('POST', `/admin/v1/tenants/${tenant.id}/subscription/cancel`)).json();
    assert.equal(cancelled.billing_state, 'accepting');
    advance(167 * HOUR);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
    advance(2 * HOUR);
    const res = await postEvents(t.app, tenant.ingestKey, [event()]);
    assert.equal(res.statusCode, 402);
    assert.equal(res.json().reason, 'subscription_cancelled');
    const reactivated = (await admin('POST', `/admin/v1/tenants/${tenant.id}/subscription/reactivate`)).json();
    assert.equal(reactivated.billing_state, 'accepting');
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
  });

  it('an upgrade from the cancelled block accepts at once: it takes the subscription up again; a move down does not', async () => {
    const tenant = await tenantWithProduct(t.app, 'pro');
    await admin('POST', `/admin/v1/tenants/${tenant.id}/subscription/cancel`);
    advance(169 * HOUR);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 402);
    const down = (await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'starter' })).json();
    assert.deepEqual([down.billing_state, down.block_reason, down.subscription_status], ['blocked', 'subscription_cancelled', 'cancelled']);
    const up = (await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'business' })).json();
    assert.deepEqual([up.billing_state, up.subscription_status, up.cancelled_at], ['accepting', 'active', null]);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
  });

  it('a tenant moved onto trial gets the trial’s end, 21 days from its creation, and then 402 trial_expired', async () => {
    const tenant = await tenantWithProduct(t.app, 'pro');
    const created = Date.parse((await tenantInfo(tenant.id)).created_at);
    advance(10 * 24 * HOUR);
    const moved = (await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'trial' })).json();
    assert.equal(moved.trial_ends_at, new Date(created + 21 * 24 * HOUR).toISOString());
    assert.equal(moved.billing_state, 'accepting');
    now = new Date(created + 21 * 24 * HOUR + 1000);
    const res = await postEvents(t.app, tenant.ingestKey, [event()]);
    assert.deepEqual([res.statusCode, res.json().reason], [402, 'trial_expired']);
    // Off the trial and back: its end stays what it was.
    await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'starter' });
    assert.equal((await admin('PATCH', `/admin/v1/tenants/${tenant.id}`, { plan: 'trial' })).json().trial_ends_at, moved.trial_ends_at);
  });

  it('counts accepted events only: duplicates and rejections are not charged', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const batch = [event(), event(), event({ product: 'ghost' })];
    await postEvents(t.app, tenant.ingestKey, batch);
    await postEvents(t.app, tenant.ingestKey, batch);
    assert.equal((await tenantInfo(tenant.id)).usage.events, 2);
  });

  it('a cap plan reached by two batches committing together: the grace runs from then, and the batch after it is 402', async () => {
    // Each batch alone stays under the allotment of 5; the two together pass it. On PostgreSQL they
    // commit on two connections without seeing each other; several tenants make the overlap certain.
    const tenants = await Promise.all(Array.from({ length: 8 }, () => tenantWithProduct(t.app, 'starter')));
    await Promise.all(
      tenants.map(async (tenant) => {
        const codes = await Promise.all([0, 1].map(() => postEvents(t.app, tenant.ingestKey, [event(), event(), event()]).then((r) => r.statusCode)));
        assert.deepEqual(codes, [200, 200]);
      }),
    );
    advance(72 * HOUR);
    for (const tenant of tenants) {
      const res = await postEvents(t.app, tenant.ingestKey, [event()]);
      assert.equal(res.statusCode, 402, 'the 72 h grace began when the allotment was reached');
      assert.equal(res.json().reason, 'quota_exhausted');
      assert.equal((await tenantInfo(tenant.id)).usage.events, 6);
    }
  });

  it('counts exactly under concurrent batches', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        postEvents(
          t.app,
          tenant.ingestKey,
          Array.from({ length: 25 }, () => event()),
        ),
      ),
    );
    assert.equal((await tenantInfo(tenant.id)).usage.events, 500);
  });
});
