// The event explorer, its NDJSON and CSV export, and CSV on reports, over app.inject against a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, event, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
const at = (i: number) => `2026-04-0${1 + (i % 3)}T10:00:00.${String(i).padStart(3, '0')}Z`;

before(async () => {
  t = await startTestApp();
  tenant = await tenantWithProduct(t.app, 'business');
  // e0..e5: days Apr 1, 2, 3, 1, 2, 3 (milliseconds = index); even ones are "open", odd ones "save".
  const batch = Array.from({ length: 6 }, (_, i) =>
    event({
      timestamp: at(i),
      name: i % 2 ? 'save' : 'open',
      actor_id: `u${i % 2}`,
      account_id: 'acme',
      properties: { n: String(i), note: i === 5 ? '=cmd|"x",y' : 'plain' },
    }),
  );
  assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
});
after(async () => t.close());

const RANGE = 'from=2026-04-01&to=2026-04-04';
const order = [5, 2, 4, 1, 3, 0].map((i) => at(i)); // newest first: Apr 3 (.005, .002), Apr 2 (.004, .001), Apr 1 (.003, .000)

describe('GET /v1/events', () => {
  it('lists newest first and pages by cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(t.app, tenant.adminKey, `/v1/events?${RANGE}&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      seen.push(...body.data.map((e: { occurred_at: string }) => e.occurred_at));
      cursor = body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, order);
  });

  it('filters by name, property and actor; shows accounts only to keys that may see them', async () => {
    const body = (await get(t.app, tenant.adminKey, `/v1/events?${RANGE}&name=save&property=n:3`)).json();
    assert.deepEqual(
      body.data.map((e: { properties: { n: string }; account_id: string }) => [e.properties.n, e.account_id]),
      [['3', 'acme']],
    );
    const byActor = (await get(t.app, tenant.adminKey, `/v1/events?${RANGE}&actor_id=u0`)).json();
    assert.equal(byActor.data.length, 3);
  });

  it('another tenant sees none of them; a starter plan sees no account ids', async () => {
    const other = await createTenant(t.app, 'business');
    assert.deepEqual((await get(t.app, other.adminKey, `/v1/events?${RANGE}`)).json().data, []);
    const starter = await tenantWithProduct(t.app, 'starter');
    assert.equal((await postEvents(t.app, starter.ingestKey, [event({ timestamp: at(1), account_id: 'acme' })])).statusCode, 200);
    const [row] = (await get(t.app, starter.adminKey, `/v1/events?${RANGE}`)).json().data;
    assert.equal('account_id' in row, false);
  });

  it('exports every match as NDJSON and as CSV, streamed', async () => {
    const nd = await t.app.inject({
      method: 'GET',
      url: `/v1/events?${RANGE}&limit=1`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'application/x-ndjson' },
    });
    assert.equal(nd.statusCode, 200);
    assert.match(String(nd.headers['content-type']), /application\/x-ndjson/);
    assert.equal(nd.headers['x-range-from'], '2026-04-01T00:00:00.000Z');
    assert.deepEqual(
      nd.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).occurred_at),
      order,
    );
    const csv = await t.app.inject({
      method: 'GET',
      url: `/v1/events?${RANGE}&name=save`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(csv.statusCode, 200);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(
      lines[0],
      'event_id,occurred_at,received_at,product,product_version,category,name,actor_id,identified_actor_id,session_id,account_id,license_id,properties',
    );
    assert.equal(lines.length, 4);
    // The JSON of properties is quoted, its quotes doubled; the formula-looking value stays inside the JSON.
    assert.match(lines[1]!, /,"\{""n"": ?""5""/);
    const bad = await t.app.inject({
      method: 'GET',
      url: '/v1/events?tz=Nowhere',
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'validation_error');
  });

  it('an export longer than one page (5,000 rows) has every row once, in order', async () => {
    const big = await tenantWithProduct(t.app, 'business');
    for (let b = 0; b < 6; b++) {
      const batch = Array.from({ length: b < 5 ? 1000 : 10 }, (_, i) =>
        event({ timestamp: new Date(Date.UTC(2026, 4, 1) + (b * 1000 + i) * 1000).toISOString() }),
      );
      assert.equal((await postEvents(t.app, big.ingestKey, batch)).statusCode, 200);
    }
    const nd = await t.app.inject({
      method: 'GET',
      url: '/v1/events?from=2026-05-01&to=2026-05-02',
      headers: { authorization: `Bearer ${big.adminKey}`, accept: 'application/x-ndjson' },
    });
    const times = nd.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).occurred_at as string);
    assert.equal(times.length, 5010);
    assert.equal(new Set(times).size, 5010);
    assert.ok(times.every((x, i) => i === 0 || x < times[i - 1]!));
  });
});

describe('CSV on reports', () => {
  it('trends as CSV: one row per series and bucket, the echo in headers', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/v1/reports/trends?${RANGE}&breakdown=name`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/csv/);
    assert.equal(res.headers['x-time-zone'], 'UTC');
    // open: e0 (Apr 1), e2 (Apr 3), e4 (Apr 2); save: e1 (Apr 2), e3 (Apr 1), e5 (Apr 3): one a day each.
    assert.deepEqual(res.body.trim().split('\r\n'), [
      'period,breakdown_value,other,date,events,actors',
      'current,open,false,2026-04-01,1,1',
      'current,open,false,2026-04-02,1,1',
      'current,open,false,2026-04-03,1,1',
      'current,save,false,2026-04-01,1,1',
      'current,save,false,2026-04-02,1,1',
      'current,save,false,2026-04-03,1,1',
    ]);
  });

  it('every report answers CSV', async () => {
    for (const url of ['/v1/reports/active-actors', '/v1/sessions', '/v1/sessions/stats', '/v1/sessions/release-health']) {
      const res = await t.app.inject({ method: 'GET', url: `${url}?${RANGE}`, headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' } });
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers['content-type']), /text\/csv/, url);
    }
  });
});
