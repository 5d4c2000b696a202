// The Invalid Events list and its retention job over app.inject against a real store; the job's clock
// is the only thing set by hand (to run it "40 days later").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deadLetterRetentionJob } from '../src/jobs/dead-letter-retention.js';
import { event, get, postEvents, runJob, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

describe('GET /v1/invalid-events', () => {
  it('lists dead letters newest first with reason, message, raw payload, product as sent, key id and received_at', async () => {
    const tenant = await tenantWithProduct(t.app);
    const first = event({ product: 'ghost' });
    await postEvents(t.app, tenant.ingestKey, [first]);
    const second = event({ properties: { license_id: 'L' } });
    await postEvents(t.app, tenant.ingestKey, [second]);
    const { data, next_cursor } = (await get(t.app, tenant.adminKey, '/v1/invalid-events')).json();
    assert.equal(next_cursor, null);
    assert.deepEqual(
      data.map((d: { reason: string }) => d.reason),
      ['reserved_property_key', 'UNRECOGNIZED_PRODUCT'],
    );
    assert.equal(data[1].product, 'ghost');
    assert.deepEqual(data[1].payload, first);
    assert.equal(data[1].kind, 'event');
    assert.match(data[1].message, /ghost/);
    assert.ok(data[1].api_key_id);
    assert.ok(Date.parse(data[1].received_at) <= Date.now());
  });

  it('filters by product, reason, kind and time, and paginates without gaps or repeats', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = [...Array.from({ length: 5 }, () => event({ product: 'ghost' })), ...Array.from({ length: 4 }, () => event({ account_id: '' })), event()];
    const before = new Date(Date.now() - 1000).toISOString();
    await postEvents(t.app, tenant.ingestKey, batch);
    const q = (qs: string) => get(t.app, tenant.adminKey, `/v1/invalid-events?${qs}`).then((r) => r.json());
    assert.equal((await q('product=ghost')).data.length, 5);
    assert.equal((await q('reason=invalid_account_id')).data.length, 4);
    assert.equal((await q('kind=event')).data.length, 9);
    assert.equal((await q('kind=session')).data.length, 0);
    assert.equal((await q(`since=${encodeURIComponent(before)}`)).data.length, 9);
    assert.equal((await q(`until=${encodeURIComponent(before)}`)).data.length, 0);
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null } = await q(`limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      ids.push(...page.data.map((d) => d.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.equal(ids.length, 9);
    assert.equal(new Set(ids).size, 9);
    assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');
    assert.equal((await get(t.app, tenant.adminKey, '/v1/invalid-events?kind=nonsense')).statusCode, 400);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/invalid-events?since=yesterday')).statusCode, 400);
  });

  it('an unknown or misspelt parameter is a 400 naming it, as on every query (CONTRACT.md)', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const param of ['reasons=UNRECOGNIZED_PRODUCT', 'from=2026-01-01', 'foo=1']) {
      const res = await get(t.app, tenant.adminKey, `/v1/invalid-events?${param}`);
      assert.equal(res.statusCode, 400, param);
      assert.equal(res.json().code, 'validation_error');
      assert.deepEqual(
        res.json().errors.map((e: { field: string }) => e.field),
        [param.split('=')[0]],
      );
    }
    assert.equal((await get(t.app, tenant.adminKey, '/v1/invalid-events?reason=UNRECOGNIZED_PRODUCT&kind=event&limit=5')).statusCode, 200);
  });

  it('truncates a huge raw element to 8 KB', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event({ blob: 'é'.repeat(20_000) })]);
    const [row] = await t.db.query<{ payload: string }>('SELECT payload FROM invalid_events WHERE tenant_id = $1', [tenant.id]);
    assert.ok(Buffer.byteLength(row!.payload) <= 8192);
    assert.ok(Buffer.byteLength(row!.payload) > 8000);
    assert.ok(!row!.payload.includes('\ufffd'), 'cut at a character boundary');
  });

  it('keeps dead letters for the retention period, then the job removes them', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event({ product: 'ghost' })]);
    await runJob(t.db, deadLetterRetentionJob(30), { now: () => new Date(Date.now() + 29 * 86_400_000) });
    assert.equal((await get(t.app, tenant.adminKey, '/v1/invalid-events')).json().data.length, 1);
    await runJob(t.db, deadLetterRetentionJob(30), { now: () => new Date(Date.now() + 31 * 86_400_000) });
    assert.equal((await get(t.app, tenant.adminKey, '/v1/invalid-events')).json().data.length, 0);
  });
});
