// Trends and active actors over app.inject against a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); the rollup job runs once for real; nothing is faked. The right answers are worked out by hand in the comments.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN_TOKEN,
  createProduct,
  createTenant,
  event,
  foldReadModel,
  get,
  post,
  postEvents,
  startTestApp,
  tenantWithProduct,
  type TestApp,
} from './helpers/app.js';

let t: TestApp;
let key: string;

// The fixture (UTC). 2026-01-29 is a Thursday; weeks start on Monday (Jan 26, Feb 2).
//   a1: Jan 29 10:00 click, Jan 31 23:30 click, Feb 1 10:00 view        (plan free)
//   a2: Jan 30 12:00 click, Feb 1 12:00 click, Feb 2 12:00 view         (plan pro)
//   a3: Feb 2 01:00 click  (= Feb 1 20:00 in New York, UTC-5)           (plan pro)
//   a4: Jan 20 12:00 click (before every range), Feb 2 15:00 click      (plan pro)
const FIXTURE: [string, string, string][] = [
  ['a1', '2026-01-29T10:00:00Z', 'click'],
  ['a1', '2026-01-31T23:30:00Z', 'click'],
  ['a1', '2026-02-01T10:00:00Z', 'view'],
  ['a2', '2026-01-30T12:00:00Z', 'click'],
  ['a2', '2026-02-01T12:00:00Z', 'click'],
  ['a2', '2026-02-02T12:00:00Z', 'view'],
  ['a3', '2026-02-02T01:00:00Z', 'click'],
  ['a4', '2026-01-20T12:00:00Z', 'click'],
  ['a4', '2026-02-02T15:00:00Z', 'click'],
];

before(async () => {
  t = await startTestApp();
  const tenant = await tenantWithProduct(t.app, 'business');
  key = tenant.adminKey;
  const batch = FIXTURE.map(([actor, timestamp, name]) =>
    event({ actor_id: actor, timestamp, name, account_id: actor === 'a1' ? 'acme' : 'globex', properties: { plan: actor === 'a1' ? 'free' : 'pro' } }),
  );
  assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
  await foldReadModel(t.db);
});
after(async () => t.close());

const RANGE = 'from=2026-01-29&to=2026-02-03';
async function ok(url: string) {
  const res = await get(t.app, key, url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}
const points = (s: { data: { date: string; events: number; actors: number }[] }) => s.data.map((p) => [p.date, p.events, p.actors]);

describe('GET /v1/reports/trends', () => {
  it('counts events and distinct actors per UTC day, and echoes the resolved range', async () => {
    const body = await ok(`/v1/reports/trends?${RANGE}`);
    assert.deepEqual(body.range, { from: '2026-01-29T00:00:00.000Z', to: '2026-02-03T00:00:00.000Z' });
    assert.equal(body.tz, 'UTC');
    assert.equal(body.interval, 'day');
    assert.ok(body.refreshed_at);
    assert.equal(body.series.length, 1);
    // Jan 29: a1; Jan 30: a2; Jan 31: a1 (23:30); Feb 1: a1, a2; Feb 2: a2, a3, a4. a4's Jan 20 is outside.
    assert.deepEqual(points(body.series[0]), [
      ['2026-01-29', 1, 1],
      ['2026-01-30', 1, 1],
      ['2026-01-31', 1, 1],
      ['2026-02-01', 2, 2],
      ['2026-02-02', 3, 3],
    ]);
    assert.deepEqual(body.series[0].total, { events: 8, actors: 4 });
    assert.equal(body.source, 'read_model'); // no event-level filter, UTC days
  });

  it("counts in the time zone's own days (America/New_York, UTC-5)", async () => {
    const body = await ok(`/v1/reports/trends?${RANGE}&tz=America/New_York`);
    // Local midnights: Jan 29 05:00Z to Feb 3 05:00Z. Local: a1 Jan 29 05:00, Jan 31 18:30, Feb 1 05:00;
    // a2 Jan 30 07:00, Feb 1 07:00, Feb 2 07:00; a3 Feb 1 20:00; a4 Feb 2 10:00.
    assert.deepEqual(body.range, { from: '2026-01-29T05:00:00.000Z', to: '2026-02-03T05:00:00.000Z' });
    assert.deepEqual(points(body.series[0]), [
      ['2026-01-29', 1, 1],
      ['2026-01-30', 1, 1],
      ['2026-01-31', 1, 1],
      ['2026-02-01', 3, 3], // a1, a2, a3
      ['2026-02-02', 2, 2], // a2, a4
    ]);
    assert.equal(body.source, 'read_model'); // events by UTC hour, actors by their active UTC hours
  });

  it("counts per local hour from the read model (New York's Feb 1)", async () => {
    const body = await ok('/v1/reports/trends?from=2026-02-01&to=2026-02-02&tz=America/New_York&interval=hour');
    assert.equal(body.source, 'read_model');
    // Local Feb 1: a1 05:00 (10:00Z), a2 07:00 (12:00Z), a3 20:00 (Feb 2 01:00Z); 24 hourly buckets.
    const s0 = body.series[0];
    assert.equal(s0.data.length, 24);
    assert.deepEqual(
      s0.data.filter((p: { events: number }) => p.events > 0).map((p: { date: string; events: number; actors: number }) => [p.date, p.events, p.actors]),
      [
        ['2026-02-01T05:00', 1, 1],
        ['2026-02-01T07:00', 1, 1],
        ['2026-02-01T20:00', 1, 1],
      ],
    );
    assert.deepEqual(s0.total, { events: 3, actors: 3 });
  });

  it('breaks down by account from the read model in UTC, from raw events in another zone', async () => {
    const body = await ok(`/v1/reports/trends?${RANGE}&breakdown=account`);
    assert.equal(body.source, 'read_model');
    // acme: a1's 3 events (Jan 29, Jan 31, Feb 1); globex: a2 ×3, a3, a4 (Feb 2) = 5 events by 3 actors.
    assert.deepEqual(
      body.series.map((s: { breakdown_value: string; total: unknown }) => [s.breakdown_value, s.total]),
      [
        ['globex', { events: 5, actors: 3 }],
        ['acme', { events: 3, actors: 1 }],
      ],
    );
    assert.deepEqual(points(body.series[1]), [
      ['2026-01-29', 1, 1],
      ['2026-01-30', 0, 0],
      ['2026-01-31', 1, 1],
      ['2026-02-01', 1, 1],
      ['2026-02-02', 0, 0],
    ]);
    // New York: accounts are kept per UTC day only. a1 locally: Jan 29, Jan 31 (18:30), Feb 1 (05:00).
    const ny = await ok(`/v1/reports/trends?${RANGE}&tz=America/New_York&account_id=acme`);
    assert.equal(ny.source, 'events');
    assert.deepEqual(points(ny.series[0]), [
      ['2026-01-29', 1, 1],
      ['2026-01-30', 0, 0],
      ['2026-01-31', 1, 1],
      ['2026-02-01', 1, 1],
      ['2026-02-02', 0, 0],
    ]);
  });

  it('buckets by month across the month boundary', async () => {
    const body = await ok(`/v1/reports/trends?${RANGE}&interval=month`);
    // January: 3 events (a1, a2, a1) by a1, a2; February: 5 events by a1, a2, a3, a4.
    assert.deepEqual(points(body.series[0]), [
      ['2026-01-01', 3, 2],
      ['2026-02-01', 5, 4],
    ]);
  });

  it('counts actors per week, an account "other" and a range of more than 63 days from the read model', async () => {
    // Up to 63 buckets, each actor's buckets are one bigint's bits; past that, (bucket, actor) pairs.
    const weeks = await ok(`/v1/reports/trends?${RANGE}&interval=week`);
    assert.equal(weeks.source, 'read_model');
    // Week of Jan 26 (Jan 29–Feb 1 in range): a1 ×3, a2 ×2 = 5 events by 2; week of Feb 2: a2, a3, a4.
    assert.deepEqual(points(weeks.series[0]), [
      ['2026-01-26', 5, 2],
      ['2026-02-02', 3, 3],
    ]);
    assert.deepEqual(weeks.series[0].total, { events: 8, actors: 4 });
    const top = await ok(`/v1/reports/trends?${RANGE}&breakdown=account&limit=1`);
    assert.equal(top.source, 'read_model');
    assert.deepEqual(
      top.series.map((s: { breakdown_value: string | null; other: boolean; total: unknown }) => [s.breakdown_value, s.other, s.total]),
      [
        ['globex', false, { events: 5, actors: 3 }],
        [null, true, { events: 3, actors: 1 }], // acme: a1
      ],
    );
    assert.deepEqual(
      points(top.series[1]).map((p) => p[2]),
      [1, 0, 1, 1, 0],
    );
    const long = await ok('/v1/reports/trends?from=2025-11-01&to=2026-02-03');
    assert.equal(long.source, 'read_model');
    assert.equal(long.series[0].data.length, 94);
    assert.deepEqual(long.series[0].total, { events: 9, actors: 4 }); // a4's Jan 20 too
    assert.deepEqual(
      points(long.series[0]).filter((p) => p[1] !== 0),
      [
        ['2026-01-20', 1, 1],
        ['2026-01-29', 1, 1],
        ['2026-01-30', 1, 1],
        ['2026-01-31', 1, 1],
        ['2026-02-01', 2, 2],
        ['2026-02-02', 3, 3],
      ],
    );
  });

  it('breaks down by name: the top value, then "other"', async () => {
    const body = await ok(`/v1/reports/trends?${RANGE}&breakdown=name&limit=1`);
    // click: 6 events (a1 ×2, a2 ×2, a3, a4), 4 actors; other = view: a1 Feb 1, a2 Feb 2.
    assert.deepEqual(
      body.series.map((s: { breakdown_value: string | null; other: boolean; total: unknown }) => [s.breakdown_value, s.other, s.total]),
      [
        ['click', false, { events: 6, actors: 4 }],
        [null, true, { events: 2, actors: 2 }],
      ],
    );
    assert.deepEqual(points(body.series[1]).slice(3), [
      ['2026-02-01', 1, 1],
      ['2026-02-02', 1, 1],
    ]);
  });

  it('breaks down by name from raw events per local week (New York), each actor once per week', async () => {
    const body = await ok(`/v1/reports/trends?${RANGE}&tz=America/New_York&interval=week&breakdown=name&limit=1`);
    assert.equal(body.source, 'events');
    // Local (UTC-5) week of Jan 26 (Jan 29–Feb 1 in range): click a1 Jan 29 and Jan 31 18:30, a2 Jan 30 and Feb 1,
    // a3 Feb 1 20:00 = 5 events by 3 actors; view a1 Feb 1 05:00. Week of Feb 2: click a4; view a2.
    assert.deepEqual(
      body.series.map((s: { breakdown_value: string | null; other: boolean; total: unknown }) => [s.breakdown_value, s.other, s.total]),
      [
        ['click', false, { events: 6, actors: 4 }],
        [null, true, { events: 2, actors: 2 }],
      ],
    );
    assert.deepEqual(points(body.series[0]), [
      ['2026-01-26', 5, 3],
      ['2026-02-02', 1, 1],
    ]);
    assert.deepEqual(points(body.series[1]), [
      ['2026-01-26', 1, 1],
      ['2026-02-02', 1, 1],
    ]);
    // The same range from the read model (no breakdown) and from raw events (a name filter) agree on click.
    const all = await ok(`/v1/reports/trends?${RANGE}&tz=America/New_York&interval=week`);
    assert.equal(all.source, 'read_model');
    assert.deepEqual(points(all.series[0]), [
      ['2026-01-26', 6, 3],
      ['2026-02-02', 2, 2],
    ]);
    const click = await ok(`/v1/reports/trends?${RANGE}&tz=America/New_York&interval=week&name=click`);
    assert.equal(click.source, 'events');
    assert.deepEqual(points(click.series[0]), points(body.series[0]));
    // Per hour (no bucket masks): New York's Feb 1 has a1's view at 05:00, a2's click at 07:00, a3's click at 20:00.
    const hours = await ok('/v1/reports/trends?from=2026-02-01&to=2026-02-02&tz=America/New_York&interval=hour&breakdown=name&limit=1');
    assert.equal(hours.source, 'events');
    const nonZero = (s: { data: { date: string; events: number; actors: number }[] }) => points(s).filter((p) => p[1] !== 0);
    assert.deepEqual(
      hours.series.map((s: { breakdown_value: string | null; other: boolean; total: unknown }) => [s.breakdown_value, s.other, s.total, nonZero(s as never)]),
      [
        [
          'click',
          false,
          { events: 2, actors: 2 },
          [
            ['2026-02-01T07:00', 1, 1],
            ['2026-02-01T20:00', 1, 1],
          ],
        ],
        [null, true, { events: 1, actors: 1 }, [['2026-02-01T05:00', 1, 1]]],
      ],
    );
  });

  it('filters by property equality and breaks down by a property key', async () => {
    const pro = await ok(`/v1/reports/trends?${RANGE}&property=plan:pro`);
    assert.equal(pro.source, 'events');
    assert.deepEqual(pro.series[0].total, { events: 5, actors: 3 }); // a2 ×3, a3, a4 (Feb 2)
    // No event has the key: every event is under the null value, a top value, not "other".
    const none = await ok(`/v1/reports/trends?${RANGE}&breakdown=property:nope`);
    assert.deepEqual(
      none.series.map((s: { breakdown_value: string | null; other: boolean; total: unknown }) => [s.breakdown_value, s.other, s.total]),
      [[null, false, { events: 8, actors: 4 }]],
    );
    const by = await ok(`/v1/reports/trends?${RANGE}&breakdown=property:plan`);
    assert.deepEqual(
      by.series.map((s: { breakdown_value: string; total: { events: number } }) => [s.breakdown_value, s.total.events]),
      [
        ['pro', 5],
        ['free', 3],
      ],
    );
  });

  it('answers CSV or JSON by the Accept header’s q-values, wildcards and order', async () => {
    const as = async (accept: string) => {
      const res = await t.app.inject({ url: `/v1/reports/trends?${RANGE}`, headers: { authorization: `Bearer ${key}`, accept } });
      assert.equal(res.statusCode, 200, res.body);
      return String(res.headers['content-type']).split(';')[0];
    };
    assert.equal(await as('text/csv'), 'text/csv');
    assert.equal(await as('text/*'), 'text/csv');
    assert.equal(await as('text/csv, application/json'), 'text/csv');
    assert.equal(await as('text/csv;q=0.5, application/json'), 'application/json');
    assert.equal(await as('application/json, text/csv'), 'application/json');
    assert.equal(await as('*/*'), 'application/json');
    assert.equal(await as('text/html'), 'application/json');
    assert.equal(await as('text/csv;q=0'), 'application/json');
  });

  it('compares with the previous period of the same length', async () => {
    const body = await ok('/v1/reports/trends?from=2026-02-01&to=2026-02-03&compare=previous');
    // Now: Feb 1 (2 events), Feb 2 (3): 5 events by a1, a2, a3, a4. Before: Jan 30 (a2), Jan 31 (a1).
    assert.deepEqual(body.series[0].total, { events: 5, actors: 4 });
    assert.deepEqual(body.compare.range, { from: '2026-01-30T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' });
    assert.deepEqual(points(body.compare.series[0]), [
      ['2026-01-30', 1, 1],
      ['2026-01-31', 1, 1],
    ]);
  });
});

describe('trends of a period that ends inside a day', () => {
  it('reads its whole days from the read model and the day it ends in from raw events, each actor counted once', async () => {
    // 2026-03-01 (a Sunday) to 2026-03-04 12:00 UTC: Mar 1–3 from the read model, Mar 4 00:00–12:00
    // from raw events. Folded: b1 Mar 1 and Mar 4 09:00; b2 Mar 3 and Mar 4 10:00; b3 (acme) Mar 4
    // 11:59:59; b4 at 12:00 and b5 on Feb 28 fall outside. Sent after the fold: b6 on Mar 2 (the read
    // model has not seen it: it does not count) and b7 Mar 4 08:00 (raw events see it: it counts).
    // Days: Mar 1 1/1, Mar 2 0/0, Mar 3 1/1, Mar 4 4 events of b1, b2, b3, b7. Total 6 events, 4 actors.
    // Weeks from Monday: Feb 23 (Mar 1) 1/1; Mar 2 5 events of b1, b2, b3, b7 (b2 on both sides, once).
    const tenant = await tenantWithProduct(t.app, 'business');
    const at = (actor: string, timestamp: string, account?: string) => event({ actor_id: actor, timestamp, ...(account && { account_id: account }) });
    const folded = [
      at('b1', '2026-03-01T10:00:00Z'),
      at('b1', '2026-03-04T09:00:00Z'),
      at('b2', '2026-03-03T23:30:00Z'),
      at('b2', '2026-03-04T10:00:00Z'),
      at('b3', '2026-03-04T11:59:59Z', 'acme'),
      at('b4', '2026-03-04T12:00:00Z'),
      at('b5', '2026-02-28T23:59:00Z'),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, folded)).statusCode, 200);
    await foldReadModel(t.db);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [at('b6', '2026-03-02T10:00:00Z'), at('b7', '2026-03-04T08:00:00Z')])).statusCode, 200);
    const trends = async (query: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/reports/trends?from=2026-03-01&to=2026-03-04T12:00:00Z&${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    const days = await trends('interval=day');
    assert.equal(days.source, 'read_model');
    assert.deepEqual(points(days.series[0]), [
      ['2026-03-01', 1, 1],
      ['2026-03-02', 0, 0],
      ['2026-03-03', 1, 1],
      ['2026-03-04', 4, 4],
    ]);
    assert.deepEqual(days.series[0].total, { events: 6, actors: 4 });
    const weeks = await trends('interval=week');
    assert.deepEqual(points(weeks.series[0]), [
      ['2026-02-23', 1, 1],
      ['2026-03-02', 5, 4],
    ]);
    assert.deepEqual(weeks.series[0].total, { events: 6, actors: 4 });
    const byAccount = await trends('interval=day&breakdown=account');
    assert.equal(byAccount.source, 'read_model');
    assert.deepEqual(
      byAccount.series.map((x: { breakdown_value: string | null; total: unknown }) => [x.breakdown_value, x.total]),
      [
        [null, { events: 5, actors: 3 }],
        ['acme', { events: 1, actors: 1 }],
      ],
    );
  });
});

describe('GET /v1/reports/active-actors', () => {
  it('DAU, WAU and MAU rolling across the month boundary, stickiness and lifecycle (UTC: the read model)', async () => {
    const body = await ok(`/v1/reports/active-actors?${RANGE}`);
    assert.equal(body.source, 'read_model');
    // Active days: a1 Jan 29, 31, Feb 1; a2 Jan 30, Feb 1, 2; a3 Feb 2; a4 Jan 20, Feb 2.
    // Jan 29: DAU {a1}; WAU (Jan 23–29) {a1}; MAU (Dec 31–Jan 29) {a1, a4}.
    // Jan 30: {a2}; {a1, a2}; {a1, a2, a4}.  Jan 31: {a1}; {a1, a2}; 3.  Feb 1: {a1, a2}; {a1, a2}; 3.
    // Feb 2: {a2, a3, a4}; WAU (Jan 27–Feb 2) all four; MAU all four.
    assert.deepEqual(
      body.rolling.map((r: { date: string; dau: number; wau: number; mau: number; dau_mau: number }) => [r.date, r.dau, r.wau, r.mau, r.dau_mau]),
      [
        ['2026-01-29', 1, 1, 2, 0.5],
        ['2026-01-30', 1, 2, 3, 0.3333],
        ['2026-01-31', 1, 2, 3, 0.3333],
        ['2026-02-01', 2, 2, 3, 0.6667],
        ['2026-02-02', 3, 4, 4, 0.75],
      ],
    );
    // (1/2 + 1/3 + 1/3 + 2/3 + 3/4) / 5 = 2.58333 / 5 = 0.51667
    assert.equal(body.stickiness.dau_mau, 0.5167);
    // Over the range: a1 3 days, a2 3 days, a3 1, a4 1.
    assert.deepEqual(body.stickiness.days_active, [
      { days: 1, actors: 2 },
      { days: 3, actors: 2 },
    ]);
    // First seen: a1 Jan 29, a2 Jan 30, a3 Feb 2, a4 Jan 20.
    // Jan 29: a1 new. Jan 30: a2 new, a1 dormant. Jan 31: a1 resurrecting, a2 dormant.
    // Feb 1: a1 returning, a2 resurrecting. Feb 2: a2 returning, a3 new, a4 resurrecting, a1 dormant.
    assert.deepEqual(
      body.lifecycle.map((l: { date: string; new: number; returning: number; resurrecting: number; dormant: number }) => [
        l.date,
        l.new,
        l.returning,
        l.resurrecting,
        l.dormant,
      ]),
      [
        ['2026-01-29', 1, 0, 0, 0],
        ['2026-01-30', 1, 0, 0, 1],
        ['2026-01-31', 0, 0, 1, 1],
        ['2026-02-01', 0, 1, 1, 0],
        ['2026-02-02', 1, 1, 1, 1],
      ],
    );
    assert.deepEqual(
      body.data.map((d: { active: number }) => d.active),
      [1, 1, 1, 2, 3],
    );
  });

  it('answers a range of more than 63 days (two words of days per actor) as the short range on the days they share', async () => {
    // From Nov 1 the windows reach back to Oct 1: 126 days.
    const long = await ok('/v1/reports/active-actors?from=2025-11-01&to=2026-02-03');
    const short = await ok(`/v1/reports/active-actors?${RANGE}`);
    assert.equal(long.rolling.length, 94);
    assert.deepEqual(long.rolling.slice(-5), short.rolling);
    assert.deepEqual(long.lifecycle.slice(-5), short.lifecycle);
    // a4 on Jan 20: new (first seen), DAU = WAU = MAU = 1; Jan 21: dormant.
    const on = (date: string) => long.lifecycle.find((l: { date: string }) => l.date === date);
    assert.deepEqual(on('2026-01-20'), { date: '2026-01-20', new: 1, returning: 0, resurrecting: 0, dormant: 0 });
    assert.deepEqual(on('2026-01-21'), { date: '2026-01-21', new: 0, returning: 0, resurrecting: 0, dormant: 1 });
    assert.deepEqual(
      long.rolling.find((r: { date: string }) => r.date === '2026-01-20'),
      { date: '2026-01-20', dau: 1, wau: 1, mau: 1, dau_mau: 1 },
    );
    // Days active in the range: a3 1, a4 2 (Jan 20, Feb 2), a1 3, a2 3.
    assert.deepEqual(long.stickiness.days_active, [
      { days: 1, actors: 1 },
      { days: 2, actors: 1 },
      { days: 3, actors: 2 },
    ]);
  });

  it('answers a range of years by month or week (more than 50 words of days per actor), and active accounts over it', async () => {
    const own = await tenantWithProduct(t.app, 'business');
    const batch = ['2017-03-15T10:00:00Z', '2025-06-02T10:00:00Z'].map((timestamp) => event({ actor_id: 'y1', timestamp, account_id: 'acme' }));
    assert.equal((await postEvents(t.app, own.ingestKey, batch)).statusCode, 200);
    await foldReadModel(t.db);
    // From 2017-01-01 the windows reach back to 2016-12-02: 3,318 days, 53 words (106 halves).
    const range = 'from=2017-01-01&to=2026-01-01';
    const monthly = await get(t.app, own.adminKey, `/v1/reports/active-actors?${range}&interval=month`);
    assert.equal(monthly.statusCode, 200, monthly.body);
    const body = monthly.json();
    assert.equal(body.data.length, 108);
    assert.deepEqual(
      body.data.filter((d: { active: number }) => d.active > 0),
      [
        { date: '2017-03-01', active: 1 },
        { date: '2025-06-01', active: 1 },
      ],
    );
    const life = (date: string) => body.lifecycle.find((l: { date: string }) => l.date === date);
    assert.deepEqual(life('2025-06-01'), { date: '2025-06-01', new: 0, returning: 0, resurrecting: 1, dormant: 0 });
    const weekly = await get(t.app, own.adminKey, `/v1/reports/active-actors?${range}&interval=week`);
    assert.equal(weekly.statusCode, 200, weekly.body);
    assert.deepEqual(
      weekly.json().data.filter((d: { active: number }) => d.active > 0),
      [
        { date: '2017-03-13', active: 1 },
        { date: '2025-06-02', active: 1 },
      ],
    );
    const accounts = await get(t.app, own.adminKey, `/v1/reports/accounts?${range}&interval=month`);
    assert.equal(accounts.statusCode, 200, accounts.body);
    assert.deepEqual(
      accounts.json().data.filter((d: { accounts: number }) => d.accounts > 0),
      [
        { date: '2017-03-01', accounts: 1, licenses: 0 },
        { date: '2025-06-01', accounts: 1, licenses: 0 },
      ],
    );
  });

  it('lifecycle and days active per week', async () => {
    const body = await ok(`/v1/reports/active-actors?${RANGE}&interval=week`);
    // Week of Jan 26: a1, a2 active, both first seen that week (new); a4 was active the week of Jan 19 (dormant).
    // Week of Feb 2: a2 returning, a3 new, a4 resurrecting, a1 dormant.
    assert.deepEqual(
      body.lifecycle.map((l: { date: string; new: number; returning: number; resurrecting: number; dormant: number }) => [
        l.date,
        l.new,
        l.returning,
        l.resurrecting,
        l.dormant,
      ]),
      [
        ['2026-01-26', 2, 0, 0, 1],
        ['2026-02-02', 1, 1, 1, 1],
      ],
    );
    // (actor, week) pairs: a1/Jan 26: 3 days; a2/Jan 26: 2; a2, a3, a4 in the week of Feb 2: 1 each.
    assert.deepEqual(body.stickiness.days_active, [
      { days: 1, actors: 3 },
      { days: 2, actors: 1 },
      { days: 3, actors: 1 },
    ]);
  });

  it("in New York's days, from the read model's active hours", async () => {
    const body = await ok(`/v1/reports/active-actors?${RANGE}&tz=America/New_York`);
    assert.equal(body.source, 'read_model');
    // Local active days: a1 Jan 29, 31, Feb 1; a2 Jan 30, Feb 1, 2; a3 Feb 1; a4 Jan 20, Feb 2.
    const last = body.rolling.slice(3).map((r: { date: string; dau: number; wau: number; mau: number }) => [r.date, r.dau, r.wau, r.mau]);
    assert.deepEqual(last, [
      ['2026-02-01', 3, 3, 4],
      ['2026-02-02', 2, 4, 4],
    ]);
    // a3 is first seen Feb 1 local. Feb 1: a1 returning, a2 resurrecting, a3 new.
    // Feb 2: a2 returning, a4 resurrecting, a1 and a3 dormant.
    assert.deepEqual(
      body.lifecycle
        .slice(3)
        .map((l: { new: number; returning: number; resurrecting: number; dormant: number }) => [l.new, l.returning, l.resurrecting, l.dormant]),
      [
        [1, 1, 1, 0],
        [0, 1, 1, 2],
      ],
    );
  });

  it("in Kolkata's days (UTC+5:30, not whole hours), from raw events", async () => {
    const body = await ok(`/v1/reports/active-actors?${RANGE}&tz=Asia/Kolkata`);
    assert.equal(body.source, 'events');
    // Local active days: a1 Jan 29 (15:30), Feb 1 (05:00 and 15:30); a2 Jan 30, Feb 1, Feb 2 (17:30 each);
    // a3 Feb 2 (06:30); a4 Jan 20, Feb 2 (20:30). Nobody on Jan 31 (a1's 23:30 UTC is Feb 1 here).
    assert.deepEqual(
      body.rolling.map((r: { date: string; dau: number; wau: number; mau: number }) => [r.date, r.dau, r.wau, r.mau]),
      [
        ['2026-01-29', 1, 1, 2],
        ['2026-01-30', 1, 2, 3],
        ['2026-01-31', 0, 2, 3],
        ['2026-02-01', 2, 2, 3],
        ['2026-02-02', 3, 4, 4],
      ],
    );
  });

  it("an account filter counts that account's actors only", async () => {
    const body = await ok(`/v1/reports/active-actors?${RANGE}&account_id=acme`);
    assert.deepEqual(
      body.data.map((d: { active: number }) => d.active),
      [1, 0, 1, 1, 0],
    ); // a1 only
  });
});

describe("active actors across daylight-saving changes (the read model's month rows)", () => {
  // Its own tenant. UTC instants, and their local days:
  //   d1: Mar 7 04:30 (New York Mar 6 23:30 EST), Mar 7 05:30 (Mar 7 00:30 EST): both sides of local midnight in one UTC day.
  //   d2: Mar 8 04:30 (Mar 7 23:30 EST), Mar 8 06:30 (Mar 8 01:30 EST; New York moves to EDT at 07:00 UTC that day),
  //       Mar 9 03:30 (Mar 8 23:30 EDT), Mar 9 04:30 (Mar 9 00:30 EDT: with winter's cutoff at 05:00 UTC it would be Mar 8).
  //   d3: Mar 9 04:30 (Mar 9 00:30 EDT).
  //   d4: Mar 28 23:30 (Berlin Mar 29 00:30 CET), Mar 29 21:30 (Mar 29 23:30 CEST; Berlin moves to CEST at 01:00 UTC Mar 29),
  //       Mar 29 22:30 (Mar 30 00:30 CEST: with winter's cutoff at 23:00 UTC it would be Mar 29).
  const EVENTS: [string, string][] = [
    ['d1', '2026-03-07T04:30:00Z'],
    ['d1', '2026-03-07T05:30:00Z'],
    ['d2', '2026-03-08T04:30:00Z'],
    ['d2', '2026-03-08T06:30:00Z'],
    ['d2', '2026-03-09T03:30:00Z'],
    ['d2', '2026-03-09T04:30:00Z'],
    ['d3', '2026-03-09T04:30:00Z'],
    ['d4', '2026-03-28T23:30:00Z'],
    ['d4', '2026-03-29T21:30:00Z'],
    ['d4', '2026-03-29T22:30:00Z'],
  ];
  let admin: string;
  before(async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    admin = tenant.adminKey;
    // Accounts and licenses: d1 A/L1, d2 A/L2, d3 B (no license), d4 C/L3.
    const ids: Record<string, [string, string | undefined]> = { d1: ['A', 'L1'], d2: ['A', 'L2'], d3: ['B', undefined], d4: ['C', 'L3'] };
    const batch = EVENTS.map(([actor, timestamp]) =>
      event({ actor_id: actor, timestamp, properties: { k: 'v' }, account_id: ids[actor]![0], ...(ids[actor]![1] && { license_id: ids[actor]![1] }) }),
    );
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    await foldReadModel(t.db);
  });
  const report = async (query: string) => {
    const res = await get(t.app, admin, `/v1/reports/active-actors?${query}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const rolling = (body: { rolling: { date: string; dau: number; wau: number; mau: number }[] }) => body.rolling.map((r) => [r.date, r.dau, r.wau, r.mau]);

  it("New York's local days on both sides of its change to EDT", async () => {
    const body = await report('from=2026-03-05&to=2026-03-11&tz=America/New_York');
    assert.equal(body.source, 'read_model');
    // Local active days: d1 Mar 6, 7; d2 Mar 7, 8, 9; d3 Mar 9.
    assert.deepEqual(rolling(body), [
      ['2026-03-05', 0, 0, 0],
      ['2026-03-06', 1, 1, 1],
      ['2026-03-07', 2, 2, 2],
      ['2026-03-08', 1, 2, 2],
      ['2026-03-09', 2, 3, 3],
      ['2026-03-10', 0, 3, 3],
    ]);
    // Days active over the range: d3 1, d1 2, d2 3.
    assert.deepEqual(body.stickiness.days_active, [
      { days: 1, actors: 1 },
      { days: 2, actors: 1 },
      { days: 3, actors: 1 },
    ]);
  });

  it("active accounts and licenses in New York's days on both sides of its change to EDT", async () => {
    const res = await get(t.app, admin, '/v1/reports/accounts?from=2026-03-05&to=2026-03-11&tz=America/New_York');
    assert.equal(res.statusCode, 200, res.body);
    // A: d1 Mar 6, 7 and d2 Mar 7, 8, 9; B (d3): Mar 9. L1 (d1): Mar 6, 7; L2 (d2): Mar 7, 8, 9.
    assert.deepEqual(
      res.json().data.map((d: { date: string; accounts: number; licenses: number }) => [d.date, d.accounts, d.licenses]),
      [
        ['2026-03-05', 0, 0],
        ['2026-03-06', 1, 1],
        ['2026-03-07', 1, 2],
        ['2026-03-08', 1, 1],
        ['2026-03-09', 2, 1],
        ['2026-03-10', 0, 0],
      ],
    );
  });

  it("Berlin's local days on both sides of its change to CEST, with the windows reaching back into the month's first days", async () => {
    const body = await report('from=2026-03-27&to=2026-03-31&tz=Europe/Berlin');
    assert.equal(body.source, 'read_model');
    // d4: Mar 29, 30 (Berlin). d1 Mar 7, d2 Mar 8 and 9, d3 Mar 9 (Berlin days) are in the 30-day windows only.
    assert.deepEqual(rolling(body), [
      ['2026-03-27', 0, 0, 3],
      ['2026-03-28', 0, 0, 3],
      ['2026-03-29', 1, 1, 4],
      ['2026-03-30', 1, 1, 4],
    ]);
  });

  it('UTC days, and the same answers as raw events in zones east and west, with and without daylight saving', async () => {
    const utc = await report('from=2026-03-05&to=2026-03-31');
    // UTC active days: d1 Mar 7; d2 Mar 8, 9; d3 Mar 9; d4 Mar 28, 29.
    assert.deepEqual(
      utc.data.filter((d: { active: number }) => d.active > 0).map((d: { date: string; active: number }) => [d.date, d.active]),
      [
        ['2026-03-07', 1],
        ['2026-03-08', 1],
        ['2026-03-09', 2],
        ['2026-03-28', 1],
        ['2026-03-29', 1],
      ],
    );
    // property=k:v matches every event and is answered from raw events: each zone's days must agree.
    for (const tz of ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Sydney', 'Pacific/Auckland', 'America/Los_Angeles', 'Pacific/Kiritimati']) {
      for (const interval of ['day', 'week', 'month']) {
        const q = `from=2026-02-20&to=2026-04-05&tz=${tz}&interval=${interval}`;
        const [rm, raw] = [await report(q), await report(`${q}&property=k:v`)];
        assert.equal(rm.source, 'read_model', q);
        assert.equal(raw.source, 'events', q);
        for (const part of ['data', 'rolling', 'lifecycle', 'stickiness']) assert.deepEqual(rm[part], raw[part], `${part} ${q}`);
        const accounts = async (query: string) => (await get(t.app, admin, `/v1/reports/accounts?${query}`)).json().data;
        assert.deepEqual(await accounts(q), await accounts(`${q}&property=k:v`), `accounts ${q}`);
        const env = async (query: string) => (await get(t.app, admin, `/v1/environment/os?${query}`)).json();
        const [envRm, envRaw] = [await env(q), await env(`${q}&property=k:v`)];
        assert.deepEqual([envRm.source, envRaw.source], ['read_model', 'events'], q);
        assert.deepEqual(envRm.data, envRaw.data, `environment ${q}`);
        for (const by of ['', '&breakdown=account']) {
          const trends = async (query: string) => (await get(t.app, admin, `/v1/reports/trends?${query}${by}`)).json();
          const [trRm, trRaw] = [await trends(q), await trends(`${q}&property=k:v`)];
          if (by === '' || tz === 'UTC') assert.equal(trRm.source, 'read_model', `trends ${q}${by}`);
          assert.deepEqual(trRm.series, trRaw.series, `trends ${q}${by}`);
        }
      }
    }
  });
});

describe('report rules', () => {
  it('a filter by name alone counts that name in every category and product (the explorer, trends and active actors agree)', async () => {
    // 'open' in category ui (product app: x1 on Jan 29 and Jan 30, x2 on Jan 30), in category sys
    // (product cli: x3 on Jan 30); 'close' in ui (x1, Jan 31) does not count. So: Jan 29 1 event of
    // 1 actor, Jan 30 3 events of 3 actors; 4 events, 3 actors; the category ui alone: 3 events, 2 actors.
    const tenant = await tenantWithProduct(t.app, 'business');
    await createProduct(t.app, tenant.adminKey, 'cli');
    const batch = [
      event({ actor_id: 'x1', timestamp: '2026-01-29T10:00:00Z', name: 'open' }),
      event({ actor_id: 'x1', timestamp: '2026-01-30T10:00:00Z', name: 'open' }),
      event({ actor_id: 'x2', timestamp: '2026-01-30T11:00:00Z', name: 'open' }),
      event({ actor_id: 'x3', timestamp: '2026-01-30T12:00:00Z', name: 'open', category: 'sys', product: 'cli' }),
      event({ actor_id: 'x1', timestamp: '2026-01-31T10:00:00Z', name: 'close' }),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    const read = async (url: string) => {
      const res = await get(t.app, tenant.adminKey, url);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    const trends = await read(`/v1/reports/trends?${RANGE}&name=open`);
    assert.deepEqual(points(trends.series[0]).slice(0, 3), [
      ['2026-01-29', 1, 1],
      ['2026-01-30', 3, 3],
      ['2026-01-31', 0, 0],
    ]);
    assert.deepEqual(trends.series[0].total, { events: 4, actors: 3 });
    assert.deepEqual((await read(`/v1/reports/trends?${RANGE}&name=open&category=ui`)).series[0].total, { events: 3, actors: 2 });
    assert.deepEqual((await read(`/v1/reports/trends?${RANGE}&name=open&product=cli`)).series[0].total, { events: 1, actors: 1 });
    const explorer = await read(`/v1/events?${RANGE}&name=open`);
    assert.deepEqual(
      explorer.data.map((e: { actor_id: string; category: string }) => `${e.actor_id}/${e.category}`),
      ['x3/sys', 'x2/ui', 'x1/ui', 'x1/ui'],
    );
  });

  it("a filter by name with a product counts that name in each of the product's categories, not another product's", async () => {
    // Product app: 'open' in ui (y1, Jan 29), in sys (y2, Jan 30) and in zz (y3, Jan 30), 'close' in
    // mm (y1); product cli: 'open' in aa (y4). So app's 'open': 3 events of 3 actors; cli's: 1.
    const tenant = await tenantWithProduct(t.app, 'business');
    await createProduct(t.app, tenant.adminKey, 'cli');
    const batch = [
      event({ actor_id: 'y1', timestamp: '2026-01-29T10:00:00Z', name: 'open', category: 'ui' }),
      event({ actor_id: 'y2', timestamp: '2026-01-30T10:00:00Z', name: 'open', category: 'sys' }),
      event({ actor_id: 'y3', timestamp: '2026-01-30T11:00:00Z', name: 'open', category: 'zz' }),
      event({ actor_id: 'y1', timestamp: '2026-01-30T12:00:00Z', name: 'close', category: 'mm' }),
      event({ actor_id: 'y4', timestamp: '2026-01-30T13:00:00Z', name: 'open', category: 'aa', product: 'cli' }),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    const total = async (query: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/reports/trends?${RANGE}&${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json().series[0].total;
    };
    assert.deepEqual(await total('name=open&product=app'), { events: 3, actors: 3 });
    assert.deepEqual(await total('name=open&product=cli'), { events: 1, actors: 1 });
    assert.deepEqual(await total('name=open'), { events: 4, actors: 4 });
  });

  it("another tenant sees none of this tenant's data", async () => {
    const other = await createTenant(t.app, 'business');
    const trends = (await get(t.app, other.adminKey, `/v1/reports/trends?${RANGE}`)).json();
    assert.deepEqual(trends.series[0].total, { events: 0, actors: 0 });
    const active = (await get(t.app, other.adminKey, `/v1/reports/active-actors?${RANGE}`)).json();
    assert.deepEqual(
      active.data.map((d: { active: number }) => d.active),
      [0, 0, 0, 0, 0],
    );
  });

  it('account filters and breakdowns: view_accounts (403), then the plan (402)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/tenants/${(await createTenant(t.app, 'business')).id}/keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'r', permissions: ['read'] },
    });
    const readOnly = res.json().key;
    const forbidden = await get(t.app, readOnly, '/v1/reports/trends?breakdown=account');
    assert.equal(forbidden.statusCode, 403);
    assert.equal(forbidden.json().code, 'forbidden');
    assert.equal((await get(t.app, readOnly, '/v1/reports/trends')).statusCode, 200);
    const starter = await createTenant(t.app, 'starter');
    for (const url of ['/v1/reports/trends?account_id=acme', '/v1/reports/trends?breakdown=license', '/v1/reports/active-actors?license_id=L1']) {
      const r = await get(t.app, starter.adminKey, url);
      assert.equal(r.statusCode, 402, url);
      assert.equal(r.json().code, 'plan_limit_reached');
    }
    assert.equal((await get(t.app, starter.adminKey, '/v1/reports/trends')).statusCode, 200);
  });

  it('bad parameters are a 400 naming the field; too many buckets a 422', async () => {
    for (const [query, field] of <[string, string][]>[
      ['bogus=1', 'bogus'],
      ['tz=Mars/Base', 'tz'],
      ['range=9y', 'range'],
      ['breakdown=colour', 'breakdown'],
      ['property=noseparator', 'property'],
      ['from=2026-02-30', 'from'],
    ]) {
      const r = await get(t.app, key, `/v1/reports/trends?${query}`);
      assert.equal(r.statusCode, 400, query);
      assert.ok(
        r.json().errors.some((e: { field: string }) => e.field.includes(field)),
        `${query}: ${r.body}`,
      );
    }
    const hourly = await get(t.app, key, '/v1/reports/active-actors?interval=hour');
    assert.equal(hourly.statusCode, 400);
    const big = await get(t.app, key, '/v1/reports/trends?range=700d&interval=hour');
    assert.equal(big.statusCode, 422);
    assert.equal(big.json().code, 'query_too_large');
  });
});

describe('the previous period across a change of the zone’s offset', () => {
  it('range=Nd moves back N local days and range=month a calendar month, each ending at the same local time, never by elapsed time', async () => {
    let now = new Date('2026-11-29T05:20:00Z'); // 00:20 in New York (EST), 06:20 in Berlin (CET)
    const app = await startTestApp({ db: t.db, now: () => now });
    try {
      const tenant = await tenantWithProduct(app.app, 'business');
      const range = async (query: string) => {
        const res = await get(app.app, tenant.adminKey, `/v1/reports/trends?${query}&compare=previous`);
        assert.equal(res.statusCode, 200, res.body);
        return [res.json().range, res.json().compare.range];
      };
      // New York: Oct 31 00:00 EDT to now; before: Oct 1 00:00 EDT to Oct 30 00:20 EDT (04:20Z, not 05:20Z).
      assert.deepEqual(await range('range=30d&tz=America/New_York'), [
        { from: '2026-10-31T04:00:00.000Z', to: '2026-11-29T05:20:00.000Z' },
        { from: '2026-10-01T04:00:00.000Z', to: '2026-10-30T04:20:00.000Z' },
      ]);
      // Berlin: Nov 1 00:00 CET to now; before: Oct 1 00:00 CEST to Oct 29 06:20 CET (05:20Z, not 04:20Z).
      assert.deepEqual(await range('range=month&tz=Europe/Berlin'), [
        { from: '2026-10-31T23:00:00.000Z', to: '2026-11-29T05:20:00.000Z' },
        { from: '2026-09-30T22:00:00.000Z', to: '2026-10-29T05:20:00.000Z' },
      ]);
      // March 31: February has no 31st, so the previous period is all of February, never into March.
      now = new Date('2026-03-31T10:00:00Z');
      assert.deepEqual((await range('range=month'))[1], { from: '2026-02-01T00:00:00.000Z', to: '2026-03-01T00:00:00.000Z' });
    } finally {
      await app.close();
    }
  });
});

describe('trends broken down by an environment field', () => {
  it('counts an actor linked by identify once, under its devices’ latest environment', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const env = (os_name: string) => ({ headers: { 'x-environment-data': Buffer.from(JSON.stringify({ os_name })).toString('base64') } });
    const at = (d: number) => `2026-05-0${d}T12:00:00Z`;
    // u1 on Windows (its own header); anon-a, later linked to u1, sent no environment; u2 on macOS;
    // anon-b sent Linux before it was linked to u3, who never sent one: u3 counts under Linux.
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'u1', timestamp: at(1) })], env('Windows'))).statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'anon-a', timestamp: at(2) })])).statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'u2', timestamp: at(2) })], env('macOS'))).statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'anon-b', timestamp: at(3) })], env('Linux'))).statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'u3', timestamp: at(4) })])).statusCode, 200);
    for (const [anonymous_actor_id, identified_actor_id] of [
      ['anon-a', 'u1'],
      ['anon-b', 'u3'],
    ]) {
      const link = { anonymous_actor_id, identified_actor_id, identified_at: at(5), product: 'app', product_version: null };
      assert.equal((await post(t.app, tenant.ingestKey, '/v1/actors/identify', link)).statusCode, 200);
    }
    const res = await get(t.app, tenant.adminKey, '/v1/reports/trends?from=2026-05-01&to=2026-05-06&breakdown=os');
    assert.equal(res.statusCode, 200, res.body);
    const series = res
      .json()
      .series.map((s: { breakdown_value: string; total: { events: number; actors: number } }) => [s.breakdown_value, s.total.events, s.total.actors]);
    assert.deepEqual(series.sort(), [
      ['Linux', 2, 1],
      ['Windows', 2, 1],
      ['macOS', 1, 1],
    ]);
  });
});
