// Segments over HTTP on a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); the rollup job runs once for real (first seen); nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { event, foldReadModel, get, postEvents, readOnlyKey, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const runRollups = () => foldReadModel(t.db);

const CLICK = { category: 'ui', name: 'click' };
const OPEN = { category: 'ui', name: 'open' };
const ev = (actor: string, what: object, day: string, version = '1.0.0') =>
  event({ ...what, actor_id: actor, timestamp: `2026-${day}T12:00:00Z`, product_version: version, properties: {} });
const send = (key: string, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...(payload !== undefined && { 'content-type': 'application/json' }) },
    ...(payload !== undefined && { payload: JSON.stringify(payload) }),
  });

/** s1 clicks 3× Mar 2 · s2 clicks Mar 3 on 2.0.0 · s3 opens Mar 4 on 2.0.0 · s4 clicks 2× Feb 20 and once Mar 5 · anon-5 clicks Mar 3, becomes user-5, who clicks Mar 4. */
async function seed(key: string) {
  const batch = [
    ev('s1', CLICK, '03-02'),
    ev('s1', CLICK, '03-02'),
    ev('s1', CLICK, '03-02'),
    ev('s2', CLICK, '03-03', '2.0.0'),
    ev('s3', OPEN, '03-04', '2.0.0'),
    ev('s4', CLICK, '02-20'),
    ev('s4', CLICK, '02-20'),
    ev('s4', CLICK, '03-05'),
    ev('anon-5', CLICK, '03-03'),
  ];
  assert.equal((await postEvents(t.app, key, batch)).statusCode, 200);
  assert.equal(
    (await send(key, 'POST', '/v1/actors/identify', { anonymous_actor_id: 'anon-5', identified_actor_id: 'user-5', product: 'app', product_version: '1.0.0' }))
      .statusCode,
    200,
  );
  assert.equal((await postEvents(t.app, key, [ev('user-5', CLICK, '03-04')])).statusCode, 200);
}

const range = { from: '2026-03-01', to: '2026-03-10' };
const ids = (res: { json(): { data: { id: string }[] } }) => res.json().data.map((r) => r.id);

describe('segments', () => {
  let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
  before(async () => {
    tenant = await tenantWithProduct(t.app);
    await seed(tenant.ingestKey);
    await runRollups();
  });
  const create = async (definition: object, name = 'seg') => {
    const res = await send(tenant.adminKey, 'POST', '/v1/segments', { name, definition });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().id as string;
  };

  it('did at least N times, on a version, first seen in range: sizes and actors by hand', async () => {
    // Clicks in range: s1 3, s2 1, s4 1 (2 more on Feb 20, outside), user-5 2 (anon-5's and its own) → at least 2: s1, user-5.
    const twice = await create({ ...range, did: [{ ...CLICK, min_count: 2 }] });
    assert.equal((await get(t.app, tenant.adminKey, `/v1/segments/${twice}/size`)).json().size, 2);
    assert.deepEqual(ids(await get(t.app, tenant.adminKey, `/v1/segments/${twice}/actors`)), ['s1', 'user-5']);
    const v2 = await create({ ...range, on_version: '2.0.0' });
    assert.deepEqual(ids(await get(t.app, tenant.adminKey, `/v1/segments/${v2}/actors`)), ['s2', 's3']);
    // Both: clicked and on 2.0.0 (s3 opened on 2.0.0 without a click; s1 clicked on 1.0.0 only).
    const both = await create({ ...range, did: [CLICK], on_version: '2.0.0' });
    assert.deepEqual(ids(await get(t.app, tenant.adminKey, `/v1/segments/${both}/actors`)), ['s2']);
    // Two conditions, each met by summing an anonymous id's events with its identified actor's (anon-5 once, user-5 once).
    const linked = await create({
      ...range,
      did: [
        { ...CLICK, min_count: 2 },
        { ...CLICK, min_count: 1 },
      ],
    });
    assert.deepEqual(ids(await get(t.app, tenant.adminKey, `/v1/segments/${linked}/actors`)), ['s1', 'user-5']);
    // First event ever in the range: all but s4 (first seen Feb 20).
    const fresh = await create({ ...range, first_seen_in_range: true });
    const page1 = await get(t.app, tenant.adminKey, `/v1/segments/${fresh}/actors?limit=3`);
    assert.deepEqual(ids(page1), ['s1', 's2', 's3']);
    const page2 = await get(t.app, tenant.adminKey, `/v1/segments/${fresh}/actors?limit=3&cursor=${page1.json().next_cursor}`);
    assert.deepEqual([ids(page2), page2.json().next_cursor], [['user-5'], null]);
    const csv = await t.app.inject({
      method: 'GET',
      url: `/v1/segments/${fresh}/actors`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(csv.body, 'actor_id\r\ns1\r\ns2\r\ns3\r\nuser-5\r\n');
  });

  it('without an event condition, the actors with an event in the range come from the read model', async () => {
    // A tenant of its own, seeded and folded as above; then s9 clicks on Mar 6 in account acme, not
    // yet folded. Active Mar 1–10: s1 s2 s3 s4 user-5 (anon-5 counts as user-5), not s9: 5. Raw
    // events (a version condition reads them) see s9. In account acme: nobody folded, so 0.
    const own = await tenantWithProduct(t.app, 'business');
    await seed(own.ingestKey);
    await runRollups();
    assert.equal((await postEvents(t.app, own.ingestKey, [{ ...ev('s9', CLICK, '03-06'), account_id: 'acme' }])).statusCode, 200);
    const make = async (definition: object) => {
      const res = await send(own.adminKey, 'POST', '/v1/segments', { name: 'seg', definition });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().id as string;
    };
    const active = await make(range);
    assert.deepEqual(ids(await get(t.app, own.adminKey, `/v1/segments/${active}/actors`)), ['s1', 's2', 's3', 's4', 'user-5']);
    assert.equal((await get(t.app, own.adminKey, `/v1/segments/${await make({ ...range, first_seen_in_range: true })}/size`)).json().size, 4);
    assert.equal((await get(t.app, own.adminKey, `/v1/segments/${await make({ ...range, account_id: 'acme' })}/size`)).json().size, 0);
    const raw = await make({ ...range, on_version: '1.0.0' });
    assert.deepEqual(ids(await get(t.app, own.adminKey, `/v1/segments/${raw}/actors`)), ['s1', 's4', 's9', 'user-5']);
    // Fresh as what each read: the read model's answers as of the last fold (without s9), raw events' as of now (with it).
    const folded = (await get(t.app, own.adminKey, '/v1/reports/trends?range=7d')).json().refreshed_at;
    assert.ok(folded);
    for (const url of [`/v1/segments/${active}/size`, `/v1/segments/${active}/actors`])
      assert.equal((await get(t.app, own.adminKey, url)).json().refreshed_at, folded, url);
    const fromRetention = await t.app.inject({
      method: 'POST',
      url: '/v1/retention',
      headers: { authorization: `Bearer ${own.adminKey}` },
      payload: { ...range, period: 'day' },
    });
    assert.equal(fromRetention.json().refreshed_at, folded);
    const cell = await t.app.inject({
      method: 'POST',
      url: '/v1/retention/actors',
      headers: { authorization: `Bearer ${own.adminKey}` },
      payload: { ...range, period: 'day', cohort: 0, cohort_period: 0 },
    });
    assert.equal(cell.json().refreshed_at, folded, cell.body);
    for (const url of [`/v1/segments/${raw}/size`, `/v1/segments/${raw}/actors`])
      assert.ok((await get(t.app, own.adminKey, url)).json().refreshed_at > folded, url);
  });

  it('segment_id narrows a funnel and a retention matrix; save as segment from a drill-down', async () => {
    const v2 = await create({ ...range, on_version: '2.0.0' });
    const q = { ...range, steps: [CLICK, OPEN] };
    // Entered (clicked): s1 s2 s4 user-5; of the segment (s2 s3) only s2 clicked.
    assert.equal((await send(tenant.adminKey, 'POST', '/v1/funnels', q)).json().steps[0].count, 4);
    assert.equal((await send(tenant.adminKey, 'POST', '/v1/funnels', { ...q, segment_id: v2 })).json().steps[0].count, 1);
    const matrix = await send(tenant.adminKey, 'POST', '/v1/retention', { ...range, period: 'month', periods: 1, type: 'recurring', segment_id: v2 });
    assert.equal(matrix.json().cohorts[0].size, 2); // s2 and s3 were active in March
    const saved = await send(tenant.adminKey, 'POST', '/v1/funnels/actors', { ...q, step: 1, save_as_segment: { name: 'clickers' } });
    const id = saved.json().segment_id as string;
    assert.ok(id, saved.body);
    assert.deepEqual(ids(await get(t.app, tenant.adminKey, `/v1/segments/${id}/actors`)), ['s1', 's2', 's4', 'user-5']);
    assert.equal((await get(t.app, tenant.adminKey, `/v1/segments/${id}`)).json().static, true);
  });

  it('segment_id narrows the reports: trends, active actors (read model and raw events), the event explorer', async () => {
    // The segment: clicked at least twice in range = s1 and user-5 (see the first test).
    const twice = await create({ ...range, did: [{ ...CLICK, min_count: 2 }] });
    const q = `from=${range.from}&to=${range.to}`;
    // All events in range: s1 3, s2 1, s3 1, s4 1 (Mar 5), anon-5 1, user-5 1 = 8, by 5 actors (anon-5 counts as user-5).
    const all = (await get(t.app, tenant.adminKey, `/v1/reports/trends?${q}`)).json();
    assert.deepEqual(all.series[0].total, { events: 8, actors: 5 });
    // Of the segment: s1's 3 clicks (Mar 2), anon-5's (Mar 3, as user-5) and user-5's (Mar 4) = 5 events, 2 actors.
    const seg = (await get(t.app, tenant.adminKey, `/v1/reports/trends?${q}&segment_id=${twice}`)).json();
    assert.deepEqual(seg.series[0].total, { events: 5, actors: 2 });
    // Active actors per day: Mar 2 s1, Mar 3 user-5 (its anonymous click), Mar 4 user-5; none on the other days.
    // In UTC and Berlin (a whole-hour zone) from the read model's actor days and active hours; in
    // Kolkata (UTC+5:30, 12:00 UTC is 17:30 the same local day) from raw events.
    for (const tz of ['UTC', 'Europe/Berlin', 'Asia/Kolkata']) {
      const res = await get(t.app, tenant.adminKey, `/v1/reports/active-actors?${q}&tz=${tz}&segment_id=${twice}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.source, tz === 'Asia/Kolkata' ? 'events' : 'read_model', tz);
      const active = Object.fromEntries(
        body.data.filter((d: { active: number }) => d.active > 0).map((d: { date: string; active: number }) => [d.date, d.active]),
      );
      assert.deepEqual(active, { '2026-03-02': 1, '2026-03-03': 1, '2026-03-04': 1 }, tz);
    }
    const events = (await get(t.app, tenant.adminKey, `/v1/events?${q}&segment_id=${twice}`)).json();
    assert.equal(events.data.length, 5);
    // An unknown segment is a 404; sessions and exceptions (not events of actors' behaviour) do not take one.
    const unknown = await get(t.app, tenant.adminKey, `/v1/reports/trends?${q}&segment_id=00000000-0000-7000-8000-000000000000`);
    assert.deepEqual([unknown.statusCode, unknown.json().code], [404, 'not_found']);
    assert.equal((await get(t.app, tenant.adminKey, `/v1/sessions/stats?${q}&segment_id=${twice}`)).statusCode, 400);
  });

  it('a bad range in a definition is a 400 naming the definition’s field (its zone and version: below)', async () => {
    const field = async (definition: object, method: 'POST' | 'PATCH' = 'POST', url = '/v1/segments') => {
      const res = await send(tenant.adminKey, method, url, method === 'POST' ? { name: 'bad', definition } : { definition });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'validation_error');
      return res.json().errors.map((e: { field: string }) => e.field);
    };
    assert.deepEqual(await field({ range: '9999d' }), ['definition.range']);
    assert.deepEqual(await field({ ...range, interval: 'week' }), ['definition.interval']); // a segment has no buckets
    assert.deepEqual(await field({ from: '2026-03-10', to: '2026-03-01' }), ['definition.from']);
    const id = await create(range);
    assert.deepEqual(await field({ range: '9999d' }, 'PATCH', `/v1/segments/${id}`), ['definition.range']);
  });

  it('create, list, get, update, delete', async () => {
    const other = await tenantWithProduct(t.app);
    const res = await send(other.adminKey, 'POST', '/v1/segments', { name: 'a', definition: { range: '7d' } });
    const id = res.json().id as string;
    assert.deepEqual(
      (await get(t.app, other.adminKey, '/v1/segments')).json().data.map((s: { id: string }) => s.id),
      [id],
    );
    const patched = await send(other.adminKey, 'PATCH', `/v1/segments/${id}`, { name: 'b', definition: { range: '30d', on_version: '1.0.0' } });
    assert.deepEqual([patched.statusCode, patched.json().name, patched.json().definition.on_version], [200, 'b', '1.0.0']);
    assert.equal((await send(other.adminKey, 'DELETE', `/v1/segments/${id}`)).statusCode, 204);
    assert.equal((await get(t.app, other.adminKey, `/v1/segments/${id}`)).statusCode, 404);
    const bad = await send(other.adminKey, 'POST', '/v1/segments', { name: 'a', definition: { tz: 'Nowhere/Else' } });
    assert.deepEqual([bad.statusCode, bad.json().errors[0].field], [400, 'definition.tz']);
    // `latest` needs a product, as on every query: refused when saved, not first at use.
    const latest = await send(other.adminKey, 'POST', '/v1/segments', { name: 'a', definition: { version: 'latest' } });
    assert.deepEqual([latest.statusCode, latest.json().errors?.[0].field], [400, 'definition.version']);
    const patchedLatest = await send(other.adminKey, 'POST', '/v1/segments', { name: 'c', definition: { range: '7d' } });
    const edit = await send(other.adminKey, 'PATCH', `/v1/segments/${patchedLatest.json().id}`, { definition: { version: 'latest' } });
    assert.deepEqual([edit.statusCode, edit.json().errors?.[0].field], [400, 'definition.version']);
    assert.equal((await send(other.adminKey, 'POST', '/v1/segments', { name: 'd', definition: { product: 'app', version: 'latest' } })).statusCode, 201);
  });

  it('another tenant can neither see nor use a segment', async () => {
    const mine = await create({ ...range });
    const other = await tenantWithProduct(t.app);
    assert.equal((await get(t.app, other.adminKey, `/v1/segments/${mine}`)).statusCode, 404);
    assert.equal((await get(t.app, other.adminKey, `/v1/segments/${mine}/size`)).statusCode, 404);
    assert.equal((await get(t.app, other.adminKey, `/v1/segments/${mine}/actors`)).statusCode, 404);
    assert.equal((await send(other.adminKey, 'DELETE', `/v1/segments/${mine}`)).statusCode, 404);
    const used = await send(other.adminKey, 'POST', '/v1/funnels', { ...range, steps: [CLICK, OPEN], segment_id: mine });
    assert.deepEqual([used.statusCode, used.json().code], [404, 'not_found']);
    assert.deepEqual((await get(t.app, other.adminKey, '/v1/segments')).json().data, []);
  });

  it('a segment by account is a per-account answer: a key without view_accounts gets 403 wherever it is used', async () => {
    const byAccount = await create({ ...range, account_id: 'acme' });
    const plain = await create({ ...range });
    const reader = await readOnlyKey(t.app, tenant.id);
    for (const url of [
      `/v1/segments/${byAccount}/size`,
      `/v1/segments/${byAccount}/actors`,
      `/v1/reports/trends?from=2026-03-01&to=2026-03-10&segment_id=${byAccount}`,
    ]) {
      const r = await get(t.app, reader, url);
      assert.deepEqual([r.statusCode, r.json().code], [403, 'forbidden'], url);
      assert.equal((await get(t.app, tenant.adminKey, url)).statusCode, 200, url);
    }
    const used = await send(reader, 'POST', '/v1/funnels', { ...range, steps: [CLICK, OPEN], segment_id: byAccount });
    assert.deepEqual([used.statusCode, used.json().code], [403, 'forbidden']);
    // The same key may use a segment that names no account.
    assert.equal((await get(t.app, reader, `/v1/segments/${plain}/size`)).statusCode, 200);
  });

  it('drill-down lists as CSV (a funnel step, a retention cell, a segment) echo the range, time zone and refreshed_at in headers, as JSON does', async () => {
    const own = await tenantWithProduct(t.app, 'business');
    await seed(own.ingestKey);
    const scope = { ...range, tz: 'Europe/Berlin' };
    const segment = await send(own.adminKey, 'POST', '/v1/segments', { name: 'clickers', definition: { ...scope, did: [CLICK] } });
    assert.equal(segment.statusCode, 201, segment.body);
    for (const [method, url, body] of [
      ['POST', '/v1/funnels/actors', { ...scope, steps: [CLICK, OPEN], step: 1 }],
      ['POST', '/v1/retention/actors', { ...scope, period: 'day', cohort: 0, cohort_period: 0 }],
      ['GET', `/v1/segments/${segment.json().id}/actors`, undefined],
    ] as const) {
      const ask = (accept: string) =>
        t.app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${own.adminKey}`, accept, ...(body && { 'content-type': 'application/json' }) },
          ...(body && { payload: JSON.stringify(body) }),
        });
      const json = await ask('application/json');
      assert.equal(json.statusCode, 200, json.body);
      const { range: echoed, tz } = json.json();
      assert.equal(tz, 'Europe/Berlin');
      const csv = await ask('text/csv');
      assert.equal(csv.statusCode, 200, csv.body);
      assert.match(csv.body, /^actor_id\r\n/);
      assert.deepEqual([csv.headers['x-range-from'], csv.headers['x-range-to'], csv.headers['x-time-zone']], [echoed.from, echoed.to, tz], `${method} ${url}`);
      assert.match(String(csv.headers['x-refreshed-at']), /^\d{4}-\d\d-\d\dT|^never$/, `${method} ${url}`);
    }
  });
});
