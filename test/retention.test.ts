// Retention over HTTP on a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL) against a hand-computed fixture; nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, event, foldReadModel, post as postTo, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const OPEN = { category: 'ui', name: 'open' };
const CLICK = { category: 'ui', name: 'click' };
const ev = (actor: string, what: { category: string; name: string }, timestamp: string) => event({ ...what, actor_id: actor, timestamp, properties: {} });

const post = (key: string, url: string, payload: unknown, headers: Record<string, string> = {}) => postTo(t.app, key, url, payload, headers);

/**
 * Weeks from Monday 2026-03-02 (UTC): wk0 Mar 2–8, wk1 Mar 9–15, wk2 Mar 16–22, wk3 Mar 23–29.
 * r1 open Mar 2, click Mar 10, click Mar 17 · r2 open Mar 3, click Mar 24 · r3 open Mar 4 ·
 * r4 open Feb 20 (first time before the range), open Mar 5, click Mar 12 · r5 open Mar 9, open Mar 16 ·
 * anon-6 open Mar 10, identified as user-6, who clicks Mar 17 ·
 * r7 open Sun Mar 8 23:30Z (Mon Mar 9 in Tokyo), click Sun Mar 15 23:30Z (Mon Mar 16 in Tokyo).
 */
async function seed(key: string): Promise<void> {
  const h = (d: string) => `2026-${d}T10:00:00Z`;
  const batch = [
    ev('r1', OPEN, h('03-02')),
    ev('r1', CLICK, h('03-10')),
    ev('r1', CLICK, h('03-17')),
    ev('r2', OPEN, h('03-03')),
    ev('r2', CLICK, h('03-24')),
    ev('r3', OPEN, h('03-04')),
    ev('r4', OPEN, h('02-20')),
    ev('r4', OPEN, h('03-05')),
    ev('r4', CLICK, h('03-12')),
    ev('r5', OPEN, h('03-09')),
    ev('r5', OPEN, h('03-16')),
    ev('anon-6', OPEN, h('03-10')),
    ev('r7', OPEN, '2026-03-08T23:30:00Z'),
    ev('r7', CLICK, '2026-03-15T23:30:00Z'),
  ];
  assert.equal((await postEvents(t.app, key, batch)).statusCode, 200);
  const link = await post(key, '/v1/actors/identify', {
    anonymous_actor_id: 'anon-6',
    identified_actor_id: 'user-6',
    product: 'app',
    product_version: '1.0.0',
  });
  assert.equal(link.statusCode, 200, link.body);
  assert.equal((await postEvents(t.app, key, [ev('user-6', CLICK, h('03-17'))])).statusCode, 200);
}

const base = { start_event: OPEN, period: 'week', periods: 3, from: '2026-03-02', to: '2026-03-16' };
type Cohort = {
  cohort_start: string;
  size: number;
  values: { count: number; percentage: number; count_on_or_after: number; percentage_on_or_after: number }[];
};
const on = (c: Cohort) => c.values.map((v) => v.count);
const onOrAfter = (c: Cohort) => c.values.map((v) => v.count_on_or_after);

describe('retention', () => {
  let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
  before(async () => {
    tenant = await tenantWithProduct(t.app);
    await seed(tenant.ingestKey);
    // The rollup job folds the events once: "any event" retention, and first-time retention of a
    // start event with any event as return, read the read model (docs/behaviour.md); with a return
    // event, or a recurring start event, it reads raw events.
    await foldReadModel(t.db);
  });

  it('first time: cohorts by first open, returns by any event, on and on or after', async () => {
    const res = await post(tenant.adminKey, '/v1/retention', base);
    assert.equal(res.statusCode, 200, res.body);
    const [wk0, wk1] = res.json().cohorts as Cohort[];
    // wk0: r1 r2 r3 r7 (r4 opened first on Feb 20). Returns: r1 in wk1 and wk2, r2 in wk3, r7 in wk1.
    assert.deepEqual([wk0!.cohort_start, wk0!.size], ['2026-03-02T00:00:00.000Z', 4]);
    assert.deepEqual(on(wk0!), [4, 2, 1, 1]); // k1: r1 r7; k2: r1; k3: r2
    assert.deepEqual(onOrAfter(wk0!), [4, 3, 2, 1]); // ≥1: r1 r2 r7; ≥2: r1 r2; ≥3: r2
    assert.deepEqual(
      wk0!.values.map((v) => v.percentage),
      [1, 0.5, 0.25, 0.25],
    );
    assert.deepEqual(
      wk0!.values.map((v) => v.percentage_on_or_after),
      [1, 0.75, 0.5, 0.25],
    );
    // wk1: r5 and user-6 (anon-6's open, once); both return in wk2 (r5's open, user-6's click).
    assert.deepEqual([wk1!.size, on(wk1!), onOrAfter(wk1!)], [2, [2, 2, 0, 0], [2, 2, 0, 0]]);
  });

  it("first time of a start event reads each actor's first time from the read model, as raw events answer", async () => {
    // A tenant of its own, seeded and folded as above; then r9 opens on Mar 3, not yet folded. The
    // read model (no filter) does not see r9: wk0 is r1 r2 r3 r7 as above. Raw events (a version
    // filter reads them) see it: wk0 has 5. Without r9 the two agree cell for cell.
    const own = await tenantWithProduct(t.app);
    await seed(own.ingestKey);
    await foldReadModel(t.db);
    const matrix = async (extra: Record<string, unknown>) => {
      const res = await post(own.adminKey, '/v1/retention', { ...base, ...extra });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json().cohorts as Cohort[]).map((c) => [c.size, on(c), onOrAfter(c)]);
    };
    const expected = [
      [4, [4, 2, 1, 1], [4, 3, 2, 1]],
      [2, [2, 2, 0, 0], [2, 2, 0, 0]],
    ];
    assert.deepEqual(await matrix({}), expected);
    assert.deepEqual(await matrix({ product: 'app' }), expected, 'the tenant has one product: the same rows');
    assert.deepEqual(await matrix({ version: '1.0.0' }), expected);
    assert.equal((await postEvents(t.app, own.ingestKey, [ev('r9', OPEN, '2026-03-03T10:00:00Z')])).statusCode, 200);
    assert.deepEqual(await matrix({}), expected, 'the read model has not folded r9');
    assert.deepEqual((await matrix({ version: '1.0.0' }))[0], [5, [5, 2, 1, 1], [5, 3, 2, 1]], 'raw events count r9');
  });

  it('as CSV: the matrix in long form, one row per cohort and period', async () => {
    const res = await post(tenant.adminKey, '/v1/retention', base, { accept: 'text/csv' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    const lines = res.body.trimEnd().split('\r\n');
    assert.equal(lines[0], 'cohort_start,size,period,count,percentage,count_on_or_after,percentage_on_or_after');
    // wk0 as above by hand: 4, 2, 1, 1 on; 4, 3, 2, 1 on or after.
    assert.deepEqual(lines.slice(1, 5), [
      '2026-03-02T00:00:00.000Z,4,0,4,1,4,1',
      '2026-03-02T00:00:00.000Z,4,1,2,0.5,3,0.75',
      '2026-03-02T00:00:00.000Z,4,2,1,0.25,2,0.5',
      '2026-03-02T00:00:00.000Z,4,3,1,0.25,1,0.25',
    ]);
  });

  it('any start event by default gives the same cohorts here (each actor’s first event is an open), from the read model', async () => {
    const { start_event: _s, ...rest } = base;
    const res = await post(tenant.adminKey, '/v1/retention', rest);
    assert.deepEqual((res.json().cohorts as Cohort[]).map(on), [
      [4, 2, 1, 1],
      [2, 2, 0, 0],
    ]);
  });

  it('recurring: every week with an open', async () => {
    const res = await post(tenant.adminKey, '/v1/retention', { ...base, type: 'recurring' });
    const [wk0, wk1] = res.json().cohorts as Cohort[];
    // wk0 adds r4 (opened Mar 5, clicked Mar 12 → k1). r5's open of Mar 16 is past the range: no third cohort.
    assert.deepEqual(
      [on(wk0!), onOrAfter(wk0!)],
      [
        [5, 3, 1, 1],
        [5, 4, 2, 1],
      ],
    );
    assert.deepEqual(on(wk1!), [2, 2, 0, 0]);
    assert.equal(res.json().cohorts.length, 2);
  });

  it('recurring by day: the same cells from a short range and from one of more than 62 daily buckets', async () => {
    // Cohorts Mar 9 and Mar 10, 7 periods (returns until Mar 18). With an open as the start: Mar 9 is
    // r5 (opens again Mar 16, k7); Mar 10 is user-6 (anon-6's open; clicks Mar 17, k7). With any
    // event as the start (the read model): Mar 10 adds r1 (clicks Mar 10 and Mar 17, k7).
    const cells = (res: { json(): { cohorts: Cohort[] } }, day: string) => {
      const c = res.json().cohorts.find((x) => x.cohort_start === `2026-03-${day}T00:00:00.000Z`)!;
      return [c.size, on(c), onOrAfter(c)];
    };
    const k7 = (n: number) => [n, [n, 0, 0, 0, 0, 0, 0, n], [n, n, n, n, n, n, n, n]];
    for (const start of [{ start_event: OPEN }, {}]) {
      // 2 cohorts + 8 bounds (a mask per actor), then 69 cohorts + 8 bounds (cohort × return pairs).
      for (const from of ['2026-03-09', '2026-01-01']) {
        const res = await post(tenant.adminKey, '/v1/retention', { ...start, type: 'recurring', period: 'day', periods: 7, from, to: '2026-03-11' });
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual([cells(res, '09'), cells(res, '10')], [k7(1), k7('start_event' in start ? 1 : 2)], `${from} ${JSON.stringify(start)}`);
      }
    }
  });

  it('Tokyo weeks: r7 moves to the second cohort', async () => {
    // Tokyo is UTC+9: weeks start Sunday 15:00Z. wk0: r1 r2 r3 (r1 k1 Mar 10, k2 Mar 17; r2 k3 Mar 24).
    // wk1: r5 r7 user-6, all back the next week (Mar 16 10:00Z, Mar 15 23:30Z = Mar 16 Tokyo, Mar 17).
    const res = await post(tenant.adminKey, '/v1/retention', { ...base, tz: 'Asia/Tokyo' });
    const [wk0, wk1] = res.json().cohorts as Cohort[];
    assert.equal(wk0!.cohort_start, '2026-03-01T15:00:00.000Z');
    assert.deepEqual(
      [on(wk0!), on(wk1!)],
      [
        [3, 1, 1, 1],
        [3, 3, 0, 0],
      ],
    );
    assert.equal(res.json().tz, 'Asia/Tokyo');
  });

  it('drill-down: who is behind a cell, paged and as CSV', async () => {
    const ids = async (extra: Record<string, unknown>) => {
      const res = await post(tenant.adminKey, '/v1/retention/actors', { ...base, ...extra });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().data.map((r: { id: string }) => r.id);
    };
    assert.deepEqual(await ids({ cohort: 0, cohort_period: 0 }), ['r1', 'r2', 'r3', 'r7']);
    assert.deepEqual(await ids({ cohort: 0, cohort_period: 1 }), ['r1', 'r7']);
    assert.deepEqual(await ids({ cohort: 0, cohort_period: 1, criteria: 'on_or_after' }), ['r1', 'r2', 'r7']);
    assert.deepEqual(await ids({ cohort: 1, cohort_period: 1 }), ['r5', 'user-6']);
    const csv = await post(tenant.adminKey, '/v1/retention/actors', { ...base, cohort: 0, cohort_period: 3 }, { accept: 'text/csv' });
    assert.equal(csv.body, 'actor_id\r\nr2\r\n');
    const bad = await post(tenant.adminKey, '/v1/retention/actors', { ...base, cohort: 5, cohort_period: 0 });
    assert.deepEqual([bad.statusCode, bad.json().errors[0].field], [400, 'cohort']);
    // A period past the matrix's last names the body's field, cohort_period (period is the period's unit).
    const late = await post(tenant.adminKey, '/v1/retention/actors', { ...base, cohort: 0, cohort_period: base.periods + 1 });
    assert.deepEqual([late.statusCode, late.json().errors[0].field], [400, 'cohort_period'], late.body);
  });

  it('another tenant sees none of it; account counting is behind the plan', async () => {
    const other = await tenantWithProduct(t.app);
    const res = await post(other.adminKey, '/v1/retention', base);
    assert.deepEqual(
      (res.json().cohorts as Cohort[]).map((c) => c.size),
      [0, 0],
    );
    const starter = await createTenant(t.app, 'starter');
    const refused = await post(starter.adminKey, '/v1/retention', { ...base, count_by: 'account' });
    assert.deepEqual([refused.statusCode, refused.json().code], [402, 'plan_limit_reached']);
    const unknown = await post(tenant.adminKey, '/v1/retention', { ...base, bogus: 1 });
    assert.deepEqual([unknown.statusCode, unknown.json().code], [400, 'validation_error']);
    const interval = await post(tenant.adminKey, '/v1/retention', { ...base, period: 'week', interval: 'hour' });
    assert.deepEqual(
      [interval.statusCode, interval.json().errors?.[0]?.field],
      [400, 'interval'],
      'an interval that is not the period is refused, not ignored',
    );
    assert.equal((await post(tenant.adminKey, '/v1/retention', { ...base, period: 'week', interval: 'week' })).statusCode, 200);
  });
});

/**
 * Across a month boundary, from the read model's months (any event, UTC) and from raw events (a
 * version filter reads them), which must agree. Weeks from Monday 2026-03-23: W0 Mar 23–29,
 * W1 Mar 30–Apr 5, W2 Apr 6–12, W3 Apr 13–19.
 * m1 Mar 25, Apr 1, Apr 14 · m2 Mar 31, Apr 3, Apr 8 · m3 Apr 2, Apr 16 · m4 Mar 10 (before the
 * range), Mar 30, Apr 7 · m5 Sun Apr 5 23:30Z · m6 one event two seconds ahead of the clock, m7
 * one a day ago · m8 Mar 25, then Mar 31 and Apr 8 in account acme.
 */
describe('retention across a month boundary, read model and raw events alike', () => {
  let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
  const any = { category: 'ui', name: 'any' };
  before(async () => {
    tenant = await tenantWithProduct(t.app);
    const at = (actor: string, ...days: string[]) => days.map((d) => ev(actor, any, d.includes('T') ? d : `2026-${d}T12:00:00Z`));
    const batch = [
      ...at('m1', '03-25', '04-01', '04-14'),
      ...at('m2', '03-31', '04-03', '04-08'),
      ...at('m3', '04-02', '04-16'),
      ...at('m4', '03-10', '03-30', '04-07'),
      ...at('m5', '2026-04-05T23:30:00Z'),
      ...at('m6', new Date(Date.now() + 2000).toISOString()),
      ...at('m7', new Date(Date.now() - 86_400_000).toISOString()),
      ...at('m8', '03-25'),
      ...at('m8', '03-31', '04-08').map((e) => ({ ...e, account_id: 'acme' })),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    await foldReadModel(t.db);
  });
  /** The matrix from the read model and from raw events; asserts they are the same. */
  const both = async (q: Record<string, unknown>) => {
    const [fromModel, fromEvents] = await Promise.all([{}, { version: '1.0.0' }].map((v) => post(tenant.adminKey, '/v1/retention', { ...q, ...v })));
    assert.equal(fromModel!.statusCode, 200, fromModel!.body);
    const cells = (r: typeof fromModel) => (r!.json().cohorts as Cohort[]).map((c) => [c.size, on(c), onOrAfter(c)]);
    assert.deepEqual(cells(fromModel), cells(fromEvents), JSON.stringify(q));
    return cells(fromModel);
  };
  const weeks = { period: 'week', periods: 3, from: '2026-03-23', to: '2026-04-06' };

  it('first time by week: W0 m1 m8; W1 m2 m3 m5 (m4 came first on Mar 10)', async () => {
    assert.deepEqual(await both(weeks), [
      [2, [2, 2, 1, 1], [2, 2, 2, 1]], // m1 back in W1 and W3, m8 in W1 and W2
      [3, [3, 1, 1, 0], [3, 2, 1, 0]], // m2 back in W2, m3 in W3
    ]);
  });

  it('recurring by week: W1 also has m1, m4 and m8', async () => {
    assert.deepEqual(await both({ ...weeks, type: 'recurring' }), [
      [2, [2, 2, 1, 1], [2, 2, 2, 1]],
      [6, [6, 3, 2, 0], [6, 5, 2, 0]], // k1 m2 m4 m8; k2 m1 m3
    ]);
  });

  it('first time by month: March m1 m2 m4 m8, all back in April; April m3 m5', async () => {
    assert.deepEqual(await both({ period: 'month', periods: 1, from: '2026-03-01', to: '2026-05-01' }), [
      [4, [4, 4], [4, 4]],
      [2, [2, 0], [2, 0]],
    ]);
  });

  it('in account acme, m8 is first seen on Mar 31 (W1) and back in W2', async () => {
    assert.deepEqual(await both({ ...weeks, account_id: 'acme' }), [
      [0, [0, 0, 0, 0], [0, 0, 0, 0]],
      [1, [1, 1, 0, 0], [1, 1, 0, 0]],
    ]);
  });

  it('Tokyo weeks, first time: m5 (Apr 5 23:30Z, Apr 6 in Tokyo) falls past the range; the rest as in UTC', async () => {
    assert.deepEqual(await both({ ...weeks, tz: 'Asia/Tokyo' }), [
      [2, [2, 2, 1, 1], [2, 2, 2, 1]],
      [2, [2, 1, 1, 0], [2, 2, 1, 0]], // m2 back in W2, m3 in W3
    ]);
  });

  it('in zones with a daylight-saving change in range, the read model answers as raw events do', async () => {
    for (const tz of ['Asia/Tokyo', 'America/New_York', 'Europe/Berlin', 'America/Sao_Paulo']) {
      await both({ ...weeks, tz });
      await both({ ...weeks, tz, type: 'recurring' });
      await both({ period: 'month', periods: 1, from: '2026-03-01', to: '2026-05-01', tz });
      await both({ period: 'day', periods: 3, from: '2026-03-28', to: '2026-04-07', tz, type: 'recurring' });
      await both({ period: 'week', periods: 1, from: new Date(Date.now() - 14 * 86_400_000).toISOString().slice(0, 10), tz });
    }
  });

  it('a range that ends now: an actor whose first event is dated ahead of the clock is in no cohort', async () => {
    const from = new Date(Date.now() - 14 * 86_400_000).toISOString().slice(0, 10);
    const cells = await both({ period: 'week', periods: 1, from });
    assert.equal(
      cells.reduce((n, [size]) => n + (size as number), 0),
      1, // m7
    );
  });
});

describe('retention at a local midnight: the hour on either side decides the week', () => {
  // New York (EDT, UTC−4 from Mar 8): local midnight of Mon Apr 6 is 04:00Z. n1 and n2 first open
  // Mon Mar 30 (week W1 = Mar 30–Apr 5, local); n1 comes back Apr 6 03:30Z (Sun Apr 5 23:30 local:
  // still W1, so no return), n2 at 04:30Z (Mon Apr 6 00:30 local: W2). In UTC both are back in W2.
  let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
  before(async () => {
    tenant = await tenantWithProduct(t.app);
    const batch = [
      ev('n1', OPEN, '2026-03-30T12:00:00Z'),
      ev('n1', CLICK, '2026-04-06T03:30:00Z'),
      ev('n2', OPEN, '2026-03-30T12:00:00Z'),
      ev('n2', CLICK, '2026-04-06T04:30:00Z'),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    await foldReadModel(t.db);
  });
  const cells = async (q: Record<string, unknown>) => {
    const res = await post(tenant.adminKey, '/v1/retention', { period: 'week', periods: 1, from: '2026-03-23', to: '2026-04-06', ...q });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json().cohorts as Cohort[]).map((c) => [c.size, on(c), onOrAfter(c)]);
  };
  const W0 = [0, [0, 0], [0, 0]];

  for (const [label, q] of [
    ['first time, any event', {}],
    ['recurring', { type: 'recurring' }],
    ["a start event's first time", { start_event: OPEN }],
  ] as const) {
    it(`${label}: in New York only n2 is back in W2, in UTC both are; the read model as raw events`, async () => {
      for (const version of [undefined, '1.0.0']) {
        const v = version ? { version } : {};
        assert.deepEqual(await cells({ ...q, ...v, tz: 'America/New_York' }), [W0, [2, [2, 1], [2, 1]]], `${label} ${version ?? 'read model'}`);
        assert.deepEqual(await cells({ ...q, ...v, tz: 'UTC' }), [W0, [2, [2, 2], [2, 2]]], `${label} ${version ?? 'read model'}`);
      }
    });
  }
});
