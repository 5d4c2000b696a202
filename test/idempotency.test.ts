// Deduplication by (tenant, event_id) over app.inject against a real store; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, countStored, event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

async function usage(tenantId: string): Promise<number> {
  const res = await t.app.inject({ method: 'GET', url: `/admin/v1/tenants/${tenantId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return res.json().usage.events;
}

describe('idempotency', () => {
  it('BAD-INPUTS 25: the same batch twice is 200 both times, stored once and counted once', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = [event(), event(), event()];
    const first = await postEvents(t.app, tenant.ingestKey, batch);
    const second = await postEvents(t.app, tenant.ingestKey, batch);
    assert.equal(first.statusCode, 200);
    assert.equal(second.statusCode, 200);
    assert.ok(first.json().results.every((r: { duplicate?: boolean }) => r.duplicate === undefined));
    assert.ok(second.json().results.every((r: { status: string; duplicate?: boolean }) => r.status === 'accepted' && r.duplicate === true));
    assert.equal(second.json().accepted, 3);
    assert.equal(await countStored(t.db, tenant.id), 3);
    assert.equal(await usage(tenant.id), 3);
  });

  it('a batch mixing stored and new ids: exactly the stored ones say duplicate, and only the new ones are counted', async () => {
    const tenant = await tenantWithProduct(t.app);
    const old = [event(), event()];
    await postEvents(t.app, tenant.ingestKey, old);
    const fresh = [event(), event(), event()];
    const res = await postEvents(t.app, tenant.ingestKey, [fresh[0], old[1], fresh[1], old[0], fresh[2]]);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      res.json().results.map((r: { duplicate?: boolean }) => r.duplicate ?? false),
      [false, true, false, true, false],
    );
    assert.equal(await countStored(t.db, tenant.id), 5);
    assert.equal(await usage(tenant.id), 5);
  });

  it('BAD-INPUTS 26: the same event_id with a different payload keeps the first, with no error', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = event({ name: 'first' });
    await postEvents(t.app, tenant.ingestKey, [e]);
    const res = await postEvents(t.app, tenant.ingestKey, [{ ...e, name: 'second', category: 'other' }]);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().results[0].duplicate, true);
    const rows = await t.db.query<{ name: string }>('SELECT name FROM events WHERE tenant_id = $1', [tenant.id]);
    assert.deepEqual(rows, [{ name: 'first' }]);
  });

  it('BAD-INPUTS 28: an event_id twice in one batch is stored once; the later copy says duplicate', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = event();
    const res = await postEvents(t.app, tenant.ingestKey, [e, event(), { ...e, name: 'copy' }]);
    assert.equal(res.statusCode, 200);
    const results = res.json().results;
    assert.equal(results[0].duplicate, undefined);
    assert.equal(results[2].status, 'accepted');
    assert.equal(results[2].duplicate, true);
    assert.equal(results[2].event_id, e.event_id);
    assert.equal(await countStored(t.db, tenant.id), 2);
    assert.equal(await usage(tenant.id), 2);
  });

  it('BAD-INPUTS 28: when the first copy is invalid, the first valid copy is the one stored', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = event();
    const res = await postEvents(t.app, tenant.ingestKey, [{ ...e, name: 7 }, e]);
    assert.equal(res.statusCode, 207);
    assert.equal(res.json().results[0].reason, 'invalid_event');
    assert.equal(res.json().results[1].status, 'accepted');
    assert.equal(res.json().results[1].duplicate, undefined);
    assert.equal(await countStored(t.db, tenant.id), 1);
  });

  it('BAD-INPUTS 28: a later copy that a tenant rule would refuse (unknown product) is a duplicate of the admitted copy, as in a later batch', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = event();
    const unknown = { ...e, product: 'nope' };
    const res = await postEvents(t.app, tenant.ingestKey, [e, unknown]);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().results[1], { index: 1, event_id: e.event_id, status: 'accepted', duplicate: true });
    // The same copy in a batch of its own answers alike; an unknown product before the admitted copy is its own event, refused.
    assert.deepEqual((await postEvents(t.app, tenant.ingestKey, [unknown])).json().results[0].duplicate, true);
    const f = event();
    const first = await postEvents(t.app, tenant.ingestKey, [{ ...f, product: 'nope' }, f]);
    assert.deepEqual(
      first.json().results.map((r: { status: string; reason?: string }) => r.reason ?? r.status),
      ['UNRECOGNIZED_PRODUCT', 'accepted'],
    );
    const dead = await t.app.inject({ url: '/v1/invalid-events', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.equal(dead.json().data.length, 1, 'a dead letter for the refused first copy only');
    assert.equal(await countStored(t.db, tenant.id), 2);
  });

  it('BAD-INPUTS 29: two identical batches at the same moment both succeed and make one row each', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = Array.from({ length: 200 }, () => event());
    const [a, b] = await Promise.all([postEvents(t.app, tenant.ingestKey, batch), postEvents(t.app, tenant.ingestKey, batch)]);
    assert.equal(a.statusCode, 200);
    assert.equal(b.statusCode, 200);
    const dupes = [...a.json().results, ...b.json().results].filter((r: { duplicate?: boolean }) => r.duplicate).length;
    assert.equal(dupes, 200, 'each event is new in exactly one of the two answers');
    assert.equal(await countStored(t.db, tenant.id), 200);
    assert.equal(await usage(tenant.id), 200);
  });

  it('reversed copies of one batch in flight together never deadlock', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = Array.from({ length: 100 }, () => event());
    const reversed = [...batch].reverse();
    const all = await Promise.all([batch, reversed, batch, reversed].map((b) => postEvents(t.app, tenant.ingestKey, b)));
    assert.ok(all.every((r) => r.statusCode === 200));
    assert.equal(await countStored(t.db, tenant.id), 100);
  });

  it('counts only accepted, new events toward usage (not rejections)', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event(), event({ product: 'nope' }), event({ properties: { license: 'l' } })]);
    assert.equal(await usage(tenant.id), 1);
  });
});
