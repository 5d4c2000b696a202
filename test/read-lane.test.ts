// The read lane (src/storage/read-lane.ts): requests that only read run their statements in it,
// and on the embedded store a batch's write never queues behind a line of long reads.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Db, Queryable } from '../src/storage/db.js';
import { MAX_PASSED } from '../src/storage/embedded/write-queue.mjs';
import { inReadLane, isReadLane } from '../src/storage/read-lane.js';
import { event, get, openTestDb, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
let store: Db;
const seen: { sql: string; read: boolean }[] = [];

before(async () => {
  store = await openTestDb();
  // The real store, watched: each statement is recorded with the lane it ran in.
  const record = (sql: string) => seen.push({ sql, read: isReadLane() });
  const watched: Db = {
    ...store,
    kind: store.kind,
    query: (sql, params) => (record(sql), store.query(sql, params)),
    write: (sql, params) => (record(sql), store.write(sql, params)),
    exec: (sql) => store.exec(sql),
    tx: (fn) => store.tx((q: Queryable) => fn({ query: (sql, params) => (record(sql), q.query(sql, params)), exec: (sql) => q.exec(sql) })),
    tryWithLock: (key, fn) => store.tryWithLock(key, fn),
    withLock: (key, fn) => store.withLock(key, fn),
    ping: () => store.ping(),
    close: () => store.close(),
  };
  t = await startTestApp({ db: watched });
});
after(async () => {
  await t.close();
  await store.close();
});

test('reports and funnel queries run in the read lane; ingestion does not', async () => {
  const tenant = await tenantWithProduct(t.app);
  seen.length = 0;
  assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
  const ingest = seen.filter((s) => /INSERT INTO events/.test(s.sql));
  assert.ok(ingest.length > 0, 'the batch wrote its events');
  assert.ok(
    ingest.every((s) => !s.read),
    'a batch write is not in the read lane',
  );

  seen.length = 0;
  assert.equal((await get(t.app, tenant.adminKey, '/v1/reports/trends?range=7d')).statusCode, 200);
  assert.ok(seen.length > 0 && seen.every((s) => s.read), 'every statement of a report runs in the read lane');

  seen.length = 0;
  const funnel = await t.app.inject({
    method: 'POST',
    url: '/v1/funnels',
    headers: { authorization: `Bearer ${tenant.adminKey}` },
    payload: {
      range: '7d',
      steps: [
        { category: 'ui', name: 'a' },
        { category: 'ui', name: 'b' },
      ],
    },
  });
  assert.equal(funnel.statusCode, 200, funnel.body);
  assert.ok(seen.length > 0 && seen.every((s) => s.read), 'a funnel posted as a query runs in the read lane');
});

test('on the embedded store a write waits for the read running, not for the reads queued behind it', async (ctx) => {
  if (store.kind !== 'pglite') return ctx.skip('the lanes are the embedded store’s');
  await store.query('CREATE TEMP TABLE IF NOT EXISTS lane_probe (n int)');
  const order: string[] = [];
  const long = 'SELECT count(*) FROM generate_series(1, 300000)';
  const reads = inReadLane(() => [1, 2, 3, 4].map((i) => store.query(long).then(() => order.push(`read ${i}`))));
  // Sent after all four reads: it passes the three still waiting.
  const write = store.write('INSERT INTO lane_probe VALUES (1)').then(() => order.push('write'));
  await Promise.all([...reads, write]);
  assert.ok(order.indexOf('write') <= 1, `the write ran after at most the read that was running: ${order.join(', ')}`);
});

test(`on the embedded store a small write passes big ones queued before it, but passes one at most ${MAX_PASSED} times`, async (ctx) => {
  if (store.kind !== 'pglite') return ctx.skip('the lanes are the embedded store’s');
  await store.query('CREATE TEMP TABLE IF NOT EXISTS lane_probe (n int)');
  const order: string[] = [];
  // Big by its parameters, as a 1000-event batch's JSON is, and slow enough for the rest to queue behind the first.
  const pad = 'x'.repeat(400_000);
  const big = (i: number) =>
    store.write('INSERT INTO lane_probe SELECT count(*) FROM generate_series(1, 300000) WHERE length($1::text) > 0', [pad]).then(() => order.push(`big ${i}`));
  const small = (i: number) => store.write('INSERT INTO lane_probe VALUES ($1)', [i]).then(() => order.push(`small ${i}`));
  await Promise.all([big(1), big(2), big(3), ...[1, 2, 3, 4, 5, 6].map(small)]);
  // big 1 was running when the rest came (or, if the store was busy, waiting with them): small
  // ones pass the big ones waiting, each big one at most MAX_PASSED times; equal ones keep their order.
  const at = (name: string) => order.indexOf(name);
  assert.ok(at('small 1') < at('big 2'), `a small write passed the big ones waiting: ${order.join(', ')}`);
  assert.deepEqual(
    order.filter((o) => o.startsWith('big')),
    ['big 1', 'big 2', 'big 3'],
  );
  for (const b of ['big 1', 'big 2', 'big 3'])
    assert.ok(order.slice(0, at(b)).filter((o) => o.startsWith('small')).length <= MAX_PASSED, `${b} passed at most ${MAX_PASSED} times: ${order.join(', ')}`);
  assert.deepEqual(
    order.filter((o) => o.startsWith('small')),
    [1, 2, 3, 4, 5, 6].map((i) => `small ${i}`),
  );
});
