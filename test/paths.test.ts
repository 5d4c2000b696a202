// Paths, and the time budget of behaviour queries, over HTTP on a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDb } from '../src/storage/db.js';
import { createProduct, event, get, post, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const e = (actor: string, name: string, minute: number) =>
  event({ category: 'ui', name, actor_id: actor, timestamp: new Date(Date.parse('2026-03-02T10:00:00Z') + minute * 60_000).toISOString(), properties: {} });
const names = (p: { events: { name: string }[] }) => p.events.map((x) => x.name);

describe('paths', () => {
  let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
  before(async () => {
    tenant = await tenantWithProduct(t.app);
    // p1 open search view buy, open again (nothing after) · p2 open search view · p3 open view ·
    // anon-4 open, identified as user-4, who searches and views.
    const batch = [
      e('p1', 'open', 0),
      e('p1', 'search', 1),
      e('p1', 'view', 2),
      e('p1', 'buy', 3),
      e('p1', 'open', 10),
      e('p2', 'open', 0),
      e('p2', 'search', 1),
      e('p2', 'view', 2),
      e('p3', 'open', 0),
      e('p3', 'view', 1),
      e('anon-4', 'open', 0),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    const link = await post(t.app, tenant.ingestKey, '/v1/actors/identify', {
      anonymous_actor_id: 'anon-4',
      identified_actor_id: 'user-4',
      product: 'app',
      product_version: '1.0.0',
    });
    assert.equal(link.statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [e('user-4', 'search', 1), e('user-4', 'view', 2)])).statusCode, 200);
  });

  it('the next 2 events after open, top paths by hand', async () => {
    const res = await get(t.app, tenant.adminKey, '/v1/paths?category=ui&name=open&steps=2&from=2026-03-02&to=2026-03-03');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    // After each open: p1 [search view], p1 again [] (nothing more), p2 [search view], p3 [view], user-4 [search view].
    assert.equal(body.occurrences, 5);
    assert.deepEqual(
      body.paths.map((p: { events: { name: string }[]; occurrences: number; actors: number }) => [names(p), p.occurrences, p.actors]),
      [
        [['search', 'view'], 3, 3],
        [['view'], 1, 1],
        [[], 1, 1],
      ],
    );
  });

  it('as CSV: one row per path, its steps as category/name columns, empty where it ended', async () => {
    const url = '/v1/paths?category=ui&name=open&steps=2&from=2026-03-02&to=2026-03-03';
    const res = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    assert.equal(res.body, 'rank,step_1,step_2,occurrences,actors\r\n1,ui/search,ui/view,3,3\r\n2,ui/view,,1,1\r\n3,,,1,1\r\n');
  });

  it('the previous event before view', async () => {
    const res = await get(t.app, tenant.adminKey, '/v1/paths?category=ui&name=view&steps=1&direction=previous&from=2026-03-02&to=2026-03-03');
    // p1, p2 and user-4 searched right before; p3 opened.
    assert.deepEqual(
      res.json().paths.map((p: { events: { name: string }[]; occurrences: number }) => [names(p), p.occurrences]),
      [
        [['search'], 3],
        [['open'], 1],
      ],
    );
  });

  it("a linked anonymous id's events interleave with the user's, ties in event_id order; another product's are out of a product's scope", async () => {
    const own = await tenantWithProduct(t.app);
    await createProduct(t.app, own.adminKey, 'web');
    const id = (n: number) => `01890000-0000-7000-8000-${String(n).padStart(12, '0')}`;
    // user-7 (app): open@0 view@2 open@4 rate@6 · anon-7 (app, linked to user-7): search@1 buy@3
    // search@5 share@6 (the same instant as rate, a smaller event id: before it) · user-7 (web):
    // promo@1.5 · p8 (app): open@0 view@1.
    const batch = [
      { ...e('user-7', 'open', 0), event_id: id(1) },
      { ...e('anon-7', 'search', 1), event_id: id(2) },
      { ...e('user-7', 'promo', 1.5), product: 'web', event_id: id(3) },
      { ...e('user-7', 'view', 2), event_id: id(4) },
      { ...e('anon-7', 'buy', 3), event_id: id(5) },
      { ...e('user-7', 'open', 4), event_id: id(6) },
      { ...e('anon-7', 'search', 5), event_id: id(7) },
      { ...e('user-7', 'rate', 6), event_id: id(9) },
      { ...e('anon-7', 'share', 6), event_id: id(8) },
      { ...e('p8', 'open', 0), event_id: id(10) },
      { ...e('p8', 'view', 1), event_id: id(11) },
    ];
    assert.equal((await postEvents(t.app, own.ingestKey, batch)).statusCode, 200);
    const link = await post(t.app, own.ingestKey, '/v1/actors/identify', {
      anonymous_actor_id: 'anon-7',
      identified_actor_id: 'user-7',
      product: 'app',
      product_version: '1.0.0',
    });
    assert.equal(link.statusCode, 200);
    const ask = async (qs: string) => {
      const res = await get(t.app, own.adminKey, `/v1/paths?category=ui&from=2026-03-02&to=2026-03-03&${qs}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      return [
        body.occurrences,
        body.paths.map((p: { events: { name: string }[]; occurrences: number; actors: number }) => [names(p), p.occurrences, p.actors]),
      ];
    };
    // After user-7's open@0: anon-7's search@1, its own view@2, anon-7's buy@3; after open@4:
    // search@5, then share and rate at 6 in event id order; p8: view, then nothing.
    assert.deepEqual(await ask('name=open&steps=3&product=app'), [
      3,
      [
        [['search', 'share', 'rate'], 1, 1],
        [['search', 'view', 'buy'], 1, 1],
        [['view'], 1, 1],
      ],
    ]);
    // Without a product, web's promo@1.5 is one of user-7's events.
    assert.deepEqual(await ask('name=open&steps=3'), [
      3,
      [
        [['search', 'promo', 'view'], 1, 1],
        [['search', 'share', 'rate'], 1, 1],
        [['view'], 1, 1],
      ],
    ]);
    // Before anon-7's searches (the unit is user-7): open@0, then nothing; open@4 and buy@3.
    assert.deepEqual(await ask('name=search&steps=2&direction=previous&product=app'), [
      2,
      [
        [['open', 'buy'], 1, 1],
        [['open'], 1, 1],
      ],
    ]);
    // Before rate@6: share (same instant, smaller id), search@5, open@4.
    assert.deepEqual(await ask('name=rate&steps=3&direction=previous&product=app'), [1, [[['share', 'search', 'open'], 1, 1]]]);
  });

  it('links are followed one step: an id linked to a user that is itself linked counts for that user, its own events for the next', async () => {
    const own = await tenantWithProduct(t.app);
    // x-1 → mid-1 → top-1. x-1's events are mid-1's; mid-1's are top-1's (one step, as everywhere).
    // x-1: open@0 buy@4 · mid-1: search@1 open@3 · top-1: view@2 rate@5.
    const batch = [e('x-1', 'open', 0), e('mid-1', 'search', 1), e('top-1', 'view', 2), e('mid-1', 'open', 3), e('x-1', 'buy', 4), e('top-1', 'rate', 5)];
    assert.equal((await postEvents(t.app, own.ingestKey, batch)).statusCode, 200);
    for (const [anonymous_actor_id, identified_actor_id] of [
      ['x-1', 'mid-1'],
      ['mid-1', 'top-1'],
    ]) {
      const link = await post(t.app, own.ingestKey, '/v1/actors/identify', {
        anonymous_actor_id,
        identified_actor_id,
        product: 'app',
        product_version: '1.0.0',
      });
      assert.equal(link.statusCode, 200, link.body);
    }
    const res = await get(t.app, own.adminKey, '/v1/paths?category=ui&name=open&steps=2&from=2026-03-02&to=2026-03-03');
    assert.equal(res.statusCode, 200, res.body);
    // mid-1 (x-1's events): open@0, then buy@4 only. top-1 (mid-1's and its own): search view open rate: after open@3, rate.
    assert.deepEqual(
      [
        res.json().occurrences,
        res.json().paths.map((p: { events: { name: string }[]; occurrences: number; actors: number }) => [names(p), p.occurrences, p.actors]),
      ],
      [
        2,
        [
          [['buy'], 1, 1],
          [['rate'], 1, 1],
        ],
      ],
    );
  });

  it('another tenant sees none of it; bad and unknown parameters are a 400', async () => {
    const other = await tenantWithProduct(t.app);
    const res = await get(t.app, other.adminKey, '/v1/paths?category=ui&name=open&from=2026-03-02&to=2026-03-03');
    assert.deepEqual([res.json().occurrences, res.json().paths], [0, []]);
    for (const [qs, field] of [
      ['category=ui&name=open&steps=9', 'steps'],
      ['category=ui', 'name'],
      ['category=ui&name=open&colour=red', 'colour'],
    ]) {
      const bad = await get(t.app, tenant.adminKey, `/v1/paths?${qs}`);
      assert.equal(bad.statusCode, 400, bad.body);
      assert.ok(bad.body.includes(field!), bad.body);
    }
  });

  it('a query past the budget is a 422 query_too_large naming the range, never a 503', async () => {
    // The embedded store scans at most 92 days per behaviour query (PostgreSQL: a statement timeout instead).
    if (t.db.kind !== 'pglite') return;
    for (const [method, url, payload] of [
      ['GET', '/v1/paths?category=ui&name=open&range=365d', undefined],
      [
        'POST',
        '/v1/funnels',
        {
          steps: [
            { category: 'ui', name: 'open' },
            { category: 'ui', name: 'view' },
          ],
          range: '365d',
        },
      ],
      ['POST', '/v1/retention', { range: '365d' }],
    ] as const) {
      const res = await t.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${tenant.adminKey}`, ...(payload && { 'content-type': 'application/json' }) },
        ...(payload && { payload: JSON.stringify(payload) }),
      });
      assert.deepEqual([res.statusCode, res.json().code, res.json().errors[0].field], [422, 'query_too_large', 'range'], `${url}: ${res.body}`);
    }
  });

  it('on PostgreSQL every read query past the statement timeout is a 422 query_too_large naming the range; a write is still a 503', async () => {
    // A second app on the same database whose request pool cancels statements at 300 ms. Another
    // connection holds the events and read-model tables locked, so that the reads wait past the
    // timeout and the server cancels them (57014), as it would a query too large for its time.
    if (t.db.kind !== 'postgres') return;
    const slow = await startTestApp({ db: await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2, statementTimeoutMs: 300 }) });
    try {
      const auth = { authorization: `Bearer ${tenant.adminKey}`, 'content-type': 'application/json' };
      const answers = await t.db.tx(async (q) => {
        await q.exec('LOCK TABLE events, rm_event_hours IN ACCESS EXCLUSIVE MODE');
        const funnel = await slow.app.inject({
          method: 'POST',
          url: '/v1/funnels',
          headers: auth,
          payload: JSON.stringify({
            steps: [
              { category: 'ui', name: 'open' },
              { category: 'ui', name: 'view' },
            ],
            range: '30d',
          }),
        });
        const trends = await slow.app.inject({ method: 'GET', url: '/v1/reports/trends?range=30d', headers: { authorization: auth.authorization } });
        const paths = await slow.app.inject({
          method: 'GET',
          url: '/v1/paths?category=ui&name=open&range=30d',
          headers: { authorization: auth.authorization },
        });
        const write = await postEvents(slow.app, tenant.ingestKey, [e('p9', 'open', 0)]);
        return { funnel, trends, paths, write };
      });
      for (const [what, res] of Object.entries(answers).filter(([k]) => k !== 'write')) {
        assert.deepEqual([res.statusCode, res.json().code, res.json().errors?.[0]?.field], [422, 'query_too_large', 'range'], `${what}: ${res.body}`);
        assert.match(res.json().detail, /narrow the range/);
      }
      assert.equal(answers.write.statusCode, 503, answers.write.body);

      // The read side's own writes are writes: changing or deleting a segment whose row another
      // transaction holds waits past the timeout and is a 503 store_unavailable, not a 422.
      const saved = await t.app.inject({
        method: 'POST',
        url: '/v1/segments',
        headers: auth,
        payload: JSON.stringify({ name: 'held', definition: { range: '30d' } }),
      });
      assert.equal(saved.statusCode, 201, saved.body);
      const id = saved.json().id as string;
      const held = await t.db.tx(async (q) => {
        await q.query('SELECT 1 FROM segments WHERE id = $1 FOR UPDATE', [id]);
        const patch = await slow.app.inject({ method: 'PATCH', url: `/v1/segments/${id}`, headers: auth, payload: JSON.stringify({ name: 'renamed' }) });
        const del = await slow.app.inject({ method: 'DELETE', url: `/v1/segments/${id}`, headers: { authorization: auth.authorization } });
        return { patch, del };
      });
      for (const [what, res] of Object.entries(held)) {
        assert.deepEqual([res.statusCode, res.json().code], [503, 'store_unavailable'], `${what}: ${res.body}`);
      }
    } finally {
      await slow.close();
      await slow.db.close();
    }
  });
});
