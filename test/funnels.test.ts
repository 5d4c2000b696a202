// Funnels over HTTP on a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL) against a hand-computed fixture; nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, createTenant, event, postEvents, post as postTo, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const T0 = Date.parse('2026-03-02T10:00:00Z');
const MIN = 60_000;
const at = (minutes: number, base = T0) => new Date(base + minutes * MIN).toISOString();
const A = { category: 'ui', name: 'open' };
const B = { category: 'ui', name: 'signup' };
const C = { category: 'ui', name: 'pay' };
const X = { category: 'ui', name: 'cancel' };
const ev = (actor: string, step: { category: string; name: string }, minutes: number, extra: Record<string, unknown> = {}) =>
  event({ ...step, actor_id: actor, timestamp: at(minutes), properties: {}, ...extra });

const post = (key: string, url: string, payload: unknown, headers: Record<string, string> = {}) => postTo(t.app, key, url, payload, headers);

/**
 * The fixture (window 1 hour unless said; minutes after 2026-03-02 10:00Z):
 * u1 A0 B10 C30 · u2 A0 B20 · u3 A0 · u4 A0(plan pro) A5 B15 A20 C50 (repeated steps) ·
 * u5 C40 B20 A0, sent in that order (out-of-order arrival) · u6 B0 A10 C20 (B before A) ·
 * u7 A0 B30 C61 (C crosses the window's end) · u8 A0 X5 B10 C20 (X excluded between 1 and 2) ·
 * anon-9 A0 B10, then identified as user-9, who does C20 (one unit) ·
 * u10 A and B at 2026-03-01 23:30Z/23:40Z (the 2nd in Paris, the 1st in UTC) ·
 * u11 A at 2026-03-04 23:50Z, B at 2026-03-05 00:10Z (the conversion after the range's end counts).
 * u1's A carries plan=pro.
 */
async function seed(key: string): Promise<void> {
  const batches = [
    [ev('u1', A, 0, { properties: { plan: 'pro' } }), ev('u1', B, 10), ev('u1', C, 30)],
    [ev('u2', A, 0), ev('u2', B, 20), ev('u3', A, 0)],
    [ev('u4', A, 0, { properties: { plan: 'pro' } }), ev('u4', A, 5), ev('u4', B, 15), ev('u4', A, 20), ev('u4', C, 50)],
    [ev('u5', C, 40)],
    [ev('u5', B, 20)],
    [ev('u5', A, 0)],
    [ev('u6', B, 0), ev('u6', A, 10), ev('u6', C, 20)],
    [ev('u7', A, 0), ev('u7', B, 30), ev('u7', C, 61)],
    [ev('u8', A, 0), ev('u8', X, 5), ev('u8', B, 10), ev('u8', C, 20)],
    [ev('anon-9', A, 0), ev('anon-9', B, 10)],
    [
      event({ ...A, actor_id: 'u10', timestamp: '2026-03-01T23:30:00Z', properties: {} }),
      event({ ...B, actor_id: 'u10', timestamp: '2026-03-01T23:40:00Z', properties: {} }),
    ],
    [
      event({ ...A, actor_id: 'u11', timestamp: '2026-03-04T23:50:00Z', properties: {} }),
      event({ ...B, actor_id: 'u11', timestamp: '2026-03-05T00:10:00Z', properties: {} }),
    ],
  ];
  for (const b of batches) assert.equal((await postEvents(t.app, key, b)).statusCode, 200);
  const link = await post(key, '/v1/actors/identify', {
    anonymous_actor_id: 'anon-9',
    identified_actor_id: 'user-9',
    product: 'app',
    product_version: '1.0.0',
  });
  assert.equal(link.statusCode, 200, link.body);
  assert.equal((await postEvents(t.app, key, [ev('user-9', C, 20)])).statusCode, 200);
}

const base = { steps: [A, B, C], window: { value: 1, unit: 'hour' }, from: '2026-03-02', to: '2026-03-05' };
const counts = (body: { steps: { count: number }[] }) => body.steps.map((s) => s.count);

describe('funnels', () => {
  let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
  before(async () => {
    tenant = await tenantWithProduct(t.app);
    await seed(tenant.ingestKey);
  });

  it('ordered, with an exclusion: counts, conversion, drop-off and times by hand', async () => {
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, exclusions: [{ ...X, from_step: 1, to_step: 2 }] });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    // Entered: u1 u2 u3 u4 u5 u6 u7 user-9 u11 = 9 (u8 excluded, u10 before the range).
    // Step 2: u1 u2 u4 u5 u7 user-9 u11 = 7 (u3 never, u6's B came before A). Step 3: u1 u4 u5 user-9 = 4 (u7's C at 61 min).
    assert.deepEqual(counts(body), [9, 7, 4]);
    const [s1, s2, s3] = body.steps;
    assert.deepEqual([s2.conversion_from_first, s2.dropped, s3.conversion_from_previous, s3.dropped, s3.drop_off], [0.7778, 2, 0.5714, 3, 0.4286]);
    assert.equal(s1.median_seconds, null);
    // A→B seconds: u1 600, u2 1200, u4 900 (A0→B15), u5 1200, u7 1800, user-9 600, u11 1200:
    // sorted 600 600 900 1200 1200 1200 1800 → median 1200; mean 7500 / 7 = 1071.429.
    assert.deepEqual([s2.median_seconds, s2.average_seconds], [1200, 1071.429]);
    // B→C: u1 1200, u4 2100 (B15→C50), u5 1200, user-9 600 → median 1200, mean 5100 / 4 = 1275.
    assert.deepEqual([s3.median_seconds, s3.average_seconds], [1200, 1275]);
    // A→C of the converted: 1800, 3000, 2400, 1200 → median (1800 + 2400) / 2 = 2100, mean 8400 / 4 = 2100.
    assert.deepEqual([body.entered, body.converted, body.conversion_rate], [9, 4, 0.4444]);
    assert.deepEqual([body.time_to_convert.median_seconds, body.time_to_convert.average_seconds], [2100, 2100]);
    // Histogram from 1200 s, width (3000 − 1200) / 10 = 180 s: 1200 → bin 0, 1800 → 3, 2400 → 6, 3000 → the last.
    const hist = body.time_to_convert.histogram as { from_seconds: number; count: number }[];
    assert.equal(hist.length, 10);
    assert.deepEqual(
      hist.map((h) => h.count),
      [1, 0, 0, 1, 0, 0, 1, 0, 0, 1],
    );
    assert.equal(hist[0]!.from_seconds, 1200);
    // Trends by UTC day: the 2nd has 8 entries (4 converted), the 4th u11 (not converted).
    assert.deepEqual(
      body.trends.map((p: { period_start: string; entered: number; converted: number }) => [p.period_start.slice(0, 10), p.entered, p.converted]),
      [
        ['2026-03-02', 8, 4],
        ['2026-03-03', 0, 0],
        ['2026-03-04', 1, 0],
      ],
    );
    assert.deepEqual(body.range, { from: '2026-03-02T00:00:00.000Z', to: '2026-03-05T00:00:00.000Z' });
    assert.equal(body.tz, 'UTC');
    assert.ok(body.refreshed_at);
  });

  it('as CSV (Accept: text/csv): one row per step, the range in headers', async () => {
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, exclusions: [{ ...X, from_step: 1, to_step: 2 }] }, { accept: 'text/csv' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    assert.equal(res.headers['x-range-from'], '2026-03-02T00:00:00.000Z');
    const lines = res.body.trimEnd().split('\r\n');
    assert.equal(
      lines[0],
      'series,breakdown_value,step,category,name,count,conversion_from_first,conversion_from_previous,dropped,drop_off,median_seconds,average_seconds',
    );
    // The same numbers as the JSON answer above (by hand): 9 → 7 → 4.
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(',').slice(0, 6).join(',')),
      ['all,,1,ui,open,9', 'all,,2,ui,signup,7', 'all,,3,ui,pay,4'],
    );
    assert.equal(lines[2]!.split(',').slice(6).join(','), '0.7778,0.7778,2,0.2222,1200,1071.429');
  });

  it('without the exclusion u8 converts', async () => {
    const res = await post(tenant.adminKey, '/v1/funnels', base);
    assert.deepEqual(counts(res.json()), [10, 8, 5]);
  });

  it('strict: nothing of the actor between two steps', async () => {
    // u1 3, u2 2, u3 1, u4 2 (A0 then A5 breaks; A5 B15 then A20 breaks), u5 3, u6 1, u7 2, u8 1 (X), user-9 3, u11 2.
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, order: 'strict' });
    assert.deepEqual(counts(res.json()), [10, 7, 3]);
  });

  it('unordered: the steps in any order within the window', async () => {
    // u1 3, u2 2, u3 1, u4 3, u5 3, u6 3 (B0 A10 C20), u7 2, u8 3, user-9 3, u11 2.
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, order: 'unordered' });
    assert.deepEqual(counts(res.json()), [10, 9, 6]);
  });

  it('a time zone moves the range: in Paris u10 enters and u11 is past the end', async () => {
    // Paris is UTC+1 in March: the range is 2026-03-01 23:00Z to 2026-03-04 23:00Z.
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, tz: 'Europe/Paris', exclusions: [{ ...X, from_step: 1, to_step: 2 }] });
    const body = res.json();
    // 9 − u11 + u10 = 9; step 2: 7 − u11 + u10 = 7; step 3: 4.
    assert.deepEqual(counts(body), [9, 7, 4]);
    assert.equal(body.trends[0].period_start, '2026-03-01T23:00:00.000Z');
    assert.deepEqual([body.trends[0].entered, body.trends[0].converted], [9, 4]);
  });

  it('a property filter on a step, and a breakdown by the entry’s property', async () => {
    const filtered = await post(tenant.adminKey, '/v1/funnels', { ...base, steps: [{ ...A, properties: { plan: 'pro' } }, B, C] });
    assert.deepEqual(counts(filtered.json()), [2, 2, 2]); // u1 and u4
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, breakdown: 'properties.plan', exclusions: [{ ...X, from_step: 1, to_step: 2 }] });
    const groups = res.json().breakdown.map((g: { value: string | null; steps: { count: number }[] }) => [g.value, counts(g)]);
    // pro: u1, u4 (both convert); no plan: the other 7, of which u2 u5 u7 user-9 u11 reach B and u5 user-9 reach C.
    assert.deepEqual(groups, [
      [null, [7, 5, 2]],
      ['pro', [2, 2, 2]],
    ]);
  });

  it('drill-down: who dropped at step 2, who reached step 3, as JSON pages and CSV', async () => {
    const q = { ...base, exclusions: [{ ...X, from_step: 1, to_step: 2 }] };
    const dropped = await post(tenant.adminKey, '/v1/funnels/actors', { ...q, step: 2, status: 'dropped' });
    assert.deepEqual(
      dropped.json().data.map((r: { id: string }) => r.id),
      ['u3', 'u6'],
    );
    const page1 = await post(tenant.adminKey, '/v1/funnels/actors', { ...q, step: 3, limit: 3 });
    assert.deepEqual(
      page1.json().data.map((r: { id: string }) => r.id),
      ['u1', 'u4', 'u5'],
    );
    const page2 = await post(tenant.adminKey, '/v1/funnels/actors', { ...q, step: 3, limit: 3, cursor: page1.json().next_cursor });
    assert.deepEqual([page2.json().data.map((r: { id: string }) => r.id), page2.json().next_cursor], [['user-9'], null]);
    const csv = await post(tenant.adminKey, '/v1/funnels/actors', { ...q, step: 3 }, { accept: 'text/csv' });
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    assert.equal(csv.body, 'actor_id\r\nu1\r\nu4\r\nu5\r\nuser-9\r\n');
    // A step past the last (3) is a 400 naming it, reached or dropped: not the last step's units.
    // So is dropped at step 1 (no step before it), and a breakdown value without a breakdown: never an empty 200.
    for (const [extra, field] of [
      [{ step: 4 }, 'step'],
      [{ step: 4, status: 'dropped' }, 'step'],
      [{ step: 1, status: 'dropped' }, 'status'],
      [{ step: 2, breakdown_value: '1.0' }, 'breakdown_value'],
    ] as const) {
      const bad = await post(tenant.adminKey, '/v1/funnels/actors', { ...q, ...extra });
      assert.deepEqual([bad.statusCode, bad.json().code, bad.json().errors[0].field], [400, 'validation_error', field], bad.body);
    }
  });

  it('events at one instant go in event id order: a step may then come before or after another', async () => {
    // t1: A (id …01) then B (id …02) at the same instant: converts. t2: B (…03) then A (…04): A → B does not.
    // t3: A and a second A at one instant (ids in either order): what the state machine sees is the same.
    const tenant = await tenantWithProduct(t.app);
    const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const same = at(0);
    const batch = [
      event({ ...B, event_id: id(2), actor_id: 't1', timestamp: same, properties: {} }),
      event({ ...A, event_id: id(1), actor_id: 't1', timestamp: same, properties: {} }),
      event({ ...A, event_id: id(4), actor_id: 't2', timestamp: same, properties: {} }),
      event({ ...B, event_id: id(3), actor_id: 't2', timestamp: same, properties: {} }),
      event({ ...A, event_id: id(6), actor_id: 't3', timestamp: same, properties: {} }),
      event({ ...A, event_id: id(5), actor_id: 't3', timestamp: same, properties: {} }),
      event({ ...B, event_id: id(7), actor_id: 't3', timestamp: at(1), properties: {} }),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, steps: [A, B] });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      res.json().steps.map((s: { count: number }) => s.count),
      [3, 2],
    );
    const reached = await post(tenant.adminKey, '/v1/funnels/actors', { ...base, steps: [A, B], step: 2 });
    assert.deepEqual(
      reached.json().data.map((r: { id: string }) => r.id),
      ['t1', 't3'],
    );
  });

  it('one name in two steps, one of them filtered by property', async () => {
    const pro = { ...A, properties: { plan: 'pro' } };
    // A(pro) then any A: u1 and u4 enter (their A at 0 is pro); only u4 has another A (at 5).
    assert.deepEqual(counts((await post(tenant.adminKey, '/v1/funnels', { ...base, steps: [pro, A] })).json()), [2, 1]);
    // Any A then A(pro): ten units enter (u10's A is before the range); no later A is pro.
    assert.deepEqual(counts((await post(tenant.adminKey, '/v1/funnels', { ...base, steps: [A, pro] })).json()), [10, 0]);
  });

  it('another tenant sees none of it', async () => {
    const other = await tenantWithProduct(t.app);
    const res = await post(other.adminKey, '/v1/funnels', base);
    assert.deepEqual(counts(res.json()), [0, 0, 0]);
    const ids = await post(other.adminKey, '/v1/funnels/actors', { ...base, step: 1 });
    assert.deepEqual(ids.json().data, []);
  });

  it('bad input is a 400 naming the field; an unknown field too', async () => {
    for (const [body, field] of [
      [{ ...base, steps: [A] }, 'steps'],
      [{ ...base, order: 'sideways' }, 'order'],
      [{ ...base, exclusions: [{ ...X, from_step: 2, to_step: 2 }] }, 'exclusions.0.to_step'],
      [{ ...base, window: { value: 100, unit: 'day' } }, 'window'],
      [{ ...base, tz: 'Mars/Olympus' }, 'tz'],
      [{ ...base, breakdown: 'colour' }, 'breakdown'],
      [{ ...base, colour: 'red' }, 'colour'],
    ] as const) {
      const res = await post(tenant.adminKey, '/v1/funnels', body);
      assert.equal(res.statusCode, 400, `${field}: ${res.body}`);
      assert.equal(res.json().code, 'validation_error');
      assert.ok(JSON.stringify(res.json()).includes(field), `${field}: ${res.body}`);
    }
  });

  it('a trend of more than 1,000 periods is a 422 query_too_large naming interval and range, as a report past its buckets', async () => {
    const res = await post(tenant.adminKey, '/v1/funnels', { ...base, from: '2026-01-01', to: '2026-03-05', interval: 'hour' });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().code, 'query_too_large');
    assert.deepEqual(
      res.json().errors.map((e: { field: string }) => e.field),
      ['interval', 'range'],
    );
    const days = await post(tenant.adminKey, '/v1/funnels', { ...base, from: '2026-01-01', to: '2026-03-05', interval: 'day' });
    assert.equal(days.statusCode, 200, days.body);
  });
});

describe('funnels by session and by account', () => {
  it('counts sessions and accounts, behind the plan guard and view_accounts', async () => {
    const tenant = await tenantWithProduct(t.app);
    const S1 = '0190a000-0000-7000-8000-000000000001';
    const S2 = '0190a000-0000-7000-8000-000000000002';
    // w1 opens in session S1, w2 (same account acme) signs up in S2: acme converts, neither actor nor session does.
    await postEvents(t.app, tenant.ingestKey, [
      ev('w1', A, 0, { session_id: S1, account_id: 'acme' }),
      ev('w2', B, 10, { session_id: S2, account_id: 'acme' }),
    ]);
    const q = { steps: [A, B], from: '2026-03-02', to: '2026-03-03' };
    assert.deepEqual(counts((await post(tenant.adminKey, '/v1/funnels', { ...q, count_by: 'account' })).json()), [1, 1]);
    assert.deepEqual(counts((await post(tenant.adminKey, '/v1/funnels', { ...q, count_by: 'session' })).json()), [1, 0]);
    assert.deepEqual(counts((await post(tenant.adminKey, '/v1/funnels', q)).json()), [1, 0]);

    const starter = await createTenant(t.app, 'starter');
    const refused = await post(starter.adminKey, '/v1/funnels', { ...q, count_by: 'account' });
    assert.deepEqual([refused.statusCode, refused.json().code], [402, 'plan_limit_reached']);
    const key = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/tenants/${tenant.id}/keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'reader', permissions: ['read'] },
    });
    const reader = key.json().key as string;
    assert.equal((await post(reader, '/v1/funnels', q)).statusCode, 200);
    const forbidden = await post(reader, '/v1/funnels', { ...q, account_id: 'acme' });
    assert.deepEqual([forbidden.statusCode, forbidden.json().code], [403, 'forbidden']);
  });
});

describe('funnels: events at one instant', () => {
  it('go by event id, whatever order they were sent in', async () => {
    const tenant = await tenantWithProduct(t.app);
    const id = (n: number) => `0190a000-0000-7000-8000-00000000000${n}`;
    const now = at(0);
    // tie-a: B (id 2) sent before A (id 1), same instant: by event id A comes first, so A → B converts.
    // tie-b: A (id 4) sent before B (id 3): B comes first, so tie-b enters and stops at step 1.
    const batch = [
      event({ ...B, actor_id: 'tie-a', timestamp: now, properties: {}, event_id: id(2) }),
      event({ ...A, actor_id: 'tie-a', timestamp: now, properties: {}, event_id: id(1) }),
      event({ ...A, actor_id: 'tie-b', timestamp: now, properties: {}, event_id: id(4) }),
      event({ ...B, actor_id: 'tie-b', timestamp: now, properties: {}, event_id: id(3) }),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    const q = { steps: [A, B], from: '2026-03-02', to: '2026-03-03' };
    const res = await post(tenant.adminKey, '/v1/funnels', q);
    assert.deepEqual([counts(res.json()), res.json().steps[1].median_seconds], [[2, 1], 0]);
    const converted = await post(tenant.adminKey, '/v1/funnels/actors', { ...q, step: 2 });
    assert.deepEqual(
      converted.json().data.map((r: { id: string }) => r.id),
      ['tie-a'],
    );
  });
});

describe('funnels: a unit with many events', () => {
  it('is evaluated through its steps positions with the same answer, by hand', async () => {
    const tenant = await tenantWithProduct(t.app);
    // "big": A every minute at 0–69, X at 40.5, B at 75, C at 80 (72–73 events read: past the
    // scanning threshold of 64). Window 1 hour.
    const batch = [...Array.from({ length: 70 }, (_, m) => ev('big', A, m)), ev('big', X, 40.5), ev('big', B, 75), ev('big', C, 80)];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    const q = { steps: [A, B, C], window: { value: 1, unit: 'hour' }, from: '2026-03-02', to: '2026-03-03' };
    const times = (body: { steps: { median_seconds: number | null }[] }) => body.steps.map((s) => s.median_seconds);
    // Without the exclusion: entries before minute 15 miss B, before 20 miss C; A at 20 is the
    // earliest attempt to convert: A→B 55 min, B→C 5 min.
    const plain = (await post(tenant.adminKey, '/v1/funnels', q)).json();
    assert.deepEqual(
      [counts(plain), times(plain)],
      [
        [1, 1, 1],
        [null, 3300, 300],
      ],
    );
    // X between steps 1 and 2 kills every attempt entered at or before minute 40: A at 41 converts (B after 34 min).
    const excluded = (await post(tenant.adminKey, '/v1/funnels', { ...q, exclusions: [{ ...X, from_step: 1, to_step: 2 }] })).json();
    assert.deepEqual(
      [counts(excluded), times(excluded)],
      [
        [1, 1, 1],
        [null, 2040, 300],
      ],
    );
    // Unordered, the steps listed C, B, A: the same attempt (A at 20, then B, then C).
    const unordered = (await post(tenant.adminKey, '/v1/funnels', { ...q, steps: [C, B, A], order: 'unordered' })).json();
    assert.deepEqual(
      [counts(unordered), times(unordered)],
      [
        [1, 1, 1],
        [null, 3300, 300],
      ],
    );
  });
});
