// Raw events read in chunks (src/query/reports/chunks.ts, READ_CHUNK_ROWS): a report read five
// events per statement answers exactly what one statement answers, on the same store and data;
// and on PostgreSQL a chunk past the statement timeout is still a 422 query_too_large.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDb, type Db, type Queryable } from '../src/storage/db.js';
import { event, get, openTestDb, postEvents, startTestApp, tenantWithProduct, type Tenant, type TestApp } from './helpers/app.js';

let store: Db;
let one: TestApp;
let chunked: TestApp;
let tenant: Tenant;
let statements = 0;

// 120 events of 9 actors over 2026-03-01 … 03-21 (UTC), at hours that cross local midnights east and
// west, under 3 names, 3 versions, 6 screens (one missing): the same actors fall in many chunks of
// five, in buckets that chunks split.
function fixture(): Record<string, unknown>[] {
  let seed = 7;
  const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  const screens = ['home', 'settings', 'editor', 'billing', 'reports', undefined];
  return Array.from({ length: 120 }, (_, i) => {
    const at = Date.UTC(2026, 2, 1) + next(20 * 24) * 3_600_000 + next(60) * 60_000;
    const screen = screens[next(screens.length)];
    return event({
      actor_id: `a${next(9)}`,
      timestamp: new Date(at).toISOString(),
      name: ['click', 'view', 'open'][next(3)],
      product_version: ['1.0.0', '1.1.0', '2.0.0'][next(3)],
      properties: { k: 'v', n: i, ...(screen ? { screen } : {}) },
    });
  });
}

before(async () => {
  store = await openTestDb();
  // The store, watched: the chunked app's chunk statements are counted.
  const watched: Db = {
    ...store,
    kind: store.kind,
    query: (sql, params) => (/chunk_key/.test(sql) && statements++, store.query(sql, params)),
    write: (sql, params) => store.write(sql, params),
    exec: (sql) => store.exec(sql),
    tx: (fn) => store.tx((q: Queryable) => fn(q)),
    tryWithLock: (key, fn) => store.tryWithLock(key, fn),
    withLock: (key, fn) => store.withLock(key, fn),
    ping: () => store.ping(),
    close: () => store.close(),
  };
  one = await startTestApp({ db: store, env: { READ_CHUNK_ROWS: '0' } });
  chunked = await startTestApp({ db: watched, env: { READ_CHUNK_ROWS: '5' } });
  tenant = await tenantWithProduct(one.app, 'business');
  assert.equal((await postEvents(one.app, tenant.ingestKey, fixture())).statusCode, 200);
});
after(async () => {
  await chunked.close();
  await one.close();
  await store.close();
});

async function both(url: string) {
  const [a, b] = [await get(one.app, tenant.adminKey, url), await get(chunked.app, tenant.adminKey, url)];
  assert.equal(a.statusCode, 200, `${url}: ${a.body}`);
  assert.equal(b.statusCode, 200, `${url}: ${b.body}`);
  return [a.json(), b.json()];
}

/** The chunked app's answer is the one statement's, byte for byte, read from raw events in two chunks or more. */
async function sameInChunks(url: string): Promise<void> {
  const before = statements;
  const [a, b] = await both(url);
  assert.equal(a.source, 'events', url);
  assert.ok(statements - before >= 2, `${url}: read in ${statements - before} chunks`);
  assert.equal(JSON.stringify(b), JSON.stringify(a), url);
}

describe('trends read in chunks of five events (READ_CHUNK_ROWS=5)', () => {
  it('answers byte for byte what one statement answers: zones, intervals, breakdowns, top N and other, compare', async () => {
    const ranges = [
      'from=2026-03-01&to=2026-03-22', // days and weeks: bucket masks (≤ 63 buckets)
      'from=2026-01-15&to=2026-04-20', // 95 days: per-bucket rows past 63 buckets
    ];
    let compared = 0;
    for (const tz of ['UTC', 'America/New_York', 'Asia/Kolkata']) {
      for (const [interval, range] of [
        ['day', ranges[0]],
        ['week', ranges[0]],
        ['month', ranges[1]],
        ['day', ranges[1]],
        ['hour', 'from=2026-03-03&to=2026-03-06'],
      ] as const) {
        for (const by of ['', '&breakdown=property:screen', '&breakdown=name&limit=2', '&breakdown=property:screen&limit=3', '&breakdown=version']) {
          const url = `/v1/reports/trends?${range}&tz=${tz}&interval=${interval}&property=k:v${by}`;
          await sameInChunks(url);
          compared++;
        }
      }
    }
    // The previous period, a filter that matches a few events per chunk, and one that matches none.
    for (const extra of ['&compare=previous&breakdown=property:screen&limit=2', '&name=open&breakdown=version', '&name=none&breakdown=name']) {
      const url = `/v1/reports/trends?from=2026-03-08&to=2026-03-22&property=k:v${extra}`;
      await sameInChunks(url);
      compared++;
    }
    assert.equal(compared, 78);
  });

  it('a breakdown with an "other" series counts its actors once across the keys and chunks they fall in', async () => {
    const [a, b] = await both('/v1/reports/trends?from=2026-03-01&to=2026-03-22&property=k:v&breakdown=property:screen&limit=1');
    const other = b.series.find((s: { other: boolean }) => s.other);
    assert.ok(other && other.total.actors <= 9, JSON.stringify(other?.total));
    assert.deepEqual(b.series, a.series);
  });
});

describe('the time budget with chunks', () => {
  it('on PostgreSQL a chunk past the statement timeout is a 422 query_too_large naming the range', async () => {
    if (store.kind !== 'postgres') return;
    const slow = await startTestApp({
      db: await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2, statementTimeoutMs: 300 }),
      env: { READ_CHUNK_ROWS: '5' },
    });
    try {
      const res = await store.tx(async (q) => {
        await q.exec('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
        return slow.app.inject({
          method: 'GET',
          url: '/v1/reports/trends?from=2026-03-01&to=2026-03-22&property=k:v&breakdown=name',
          headers: { authorization: `Bearer ${tenant.adminKey}` },
        });
      });
      assert.deepEqual([res.statusCode, res.json().code, res.json().errors?.[0]?.field], [422, 'query_too_large', 'range'], res.body);
    } finally {
      await slow.close();
      await slow.db.close();
    }
  });
});

describe('the memory and time budgets with chunks', () => {
  it('past READ_CHUNK_MAX_CELLS or READ_CHUNK_BUDGET_MS a chunked read is a 422 query_too_large naming the range, and a smaller one still answers', async () => {
    const small = await startTestApp({ db: store, env: { READ_CHUNK_ROWS: '5', READ_CHUNK_MAX_CELLS: '60' } });
    try {
      // 120 events, each its own property value `n` (and hour): far more than 60 (value, actor, bucket) cells.
      const big = await get(small.app, tenant.adminKey, '/v1/reports/trends?from=2026-03-01&to=2026-03-22&interval=hour&property=k:v&breakdown=property:n');
      assert.deepEqual([big.statusCode, big.json().code, big.json().errors?.[0]?.field], [422, 'query_too_large', 'range'], big.body);
      // One name's events on one day: a handful of cells, answered as the one statement answers it.
      const url = '/v1/reports/trends?from=2026-03-03&to=2026-03-04&property=k:v&name=open&breakdown=version';
      const [a, b] = [await get(one.app, tenant.adminKey, url), await get(small.app, tenant.adminKey, url)];
      assert.equal(b.statusCode, 200, b.body);
      assert.equal(JSON.stringify(b.json()), JSON.stringify(a.json()));
      assert.ok(a.json().series.length > 0, 'the small query has data');
      // A read in chunks past its time budget: a 422 too (here a budget of 1 ms, passed after the first chunk).
      const slow = await startTestApp({ db: store, env: { READ_CHUNK_ROWS: '5', READ_CHUNK_BUDGET_MS: '1' } });
      try {
        for (const path of ['trends?from=2026-03-01&to=2026-03-22&property=k:v', 'trends?from=2026-03-01&to=2026-03-22&property=k:v&breakdown=name']) {
          const res = await get(slow.app, tenant.adminKey, `/v1/reports/${path}`);
          assert.deepEqual([res.statusCode, res.json().code, res.json().errors?.[0]?.field], [422, 'query_too_large', 'range'], `${path}: ${res.body}`);
        }
      } finally {
        await slow.close();
      }
    } finally {
      await small.close();
    }
  });
});
