// The read lane (src/storage/read-lane.ts): requests that only read run their statements in it,
// and on the embedded store a batch's write never queues behind a line of long reads.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Db, Queryable } from '../src/storage/db.js';
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
