// Health, readiness, metrics, OpenAPI and store outages over app.inject. Real stores; the outage is
// a real PostgreSQL client pointed at a port where nothing listens, not a mock.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { DEFAULT_PLANS } from '../src/domain/plans.js';
import { openDb } from '../src/storage/db.js';
import { ADMIN_TOKEN, countStored, event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

describe('operations', () => {
  it('answers /healthz and /readyz', async () => {
    assert.equal((await t.app.inject('/healthz')).statusCode, 200);
    const ready = await t.app.inject('/readyz');
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().status, 'ready');
  });

  it('readiness fails first when shutdown begins, while liveness stays up', async () => {
    const other = await startTestApp({ db: t.db });
    other.app.tally.ready.value = false;
    const down = await other.app.inject('/readyz');
    assert.deepEqual(
      [down.statusCode, down.headers['content-type'], down.headers['retry-after'], down.json().code],
      [503, 'application/problem+json; charset=utf-8', '5', 'shutting_down'],
    );
    assert.equal((await other.app.inject('/healthz')).statusCode, 200);
    await other.app.close();
  });

  it('exposes Prometheus metrics: accepted and rejected counts by reason, request durations, no tenant labels', async () => {
    const tenant = await tenantWithProduct(t.app);
    await postEvents(t.app, tenant.ingestKey, [event(), event({ properties: { account: 'x' } })]);
    const res = await t.app.inject('/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /tally_events_accepted_total \d+/);
    assert.match(res.body, /tally_events_rejected_total\{reason="reserved_property_key"\} 1/);
    assert.match(res.body, /tally_http_request_duration_seconds_bucket\{.*route="\/v1\/events"/);
    assert.ok(!res.body.includes(tenant.id));
  });

  it('serves an OpenAPI 3.1 document at /docs covering the routes', async () => {
    const doc = (await t.app.inject('/docs/json')).json();
    assert.equal(doc.openapi, '3.1.0');
    for (const path of ['/v1/events', '/v1/products', '/v1/products/{id}', '/v1/products/{id}/versions', '/v1/invalid-events', '/admin/v1/tenants']) {
      assert.ok(doc.paths[path], path);
    }
    assert.ok(doc.paths['/v1/events'].post.requestBody);
    assert.equal((await t.app.inject('/docs')).statusCode < 400, true);
  });

  it('BAD-INPUTS 41: an unreachable store gives 503 with Retry-After, never a 200; liveness stays up', async () => {
    const down = await openDb({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 });
    const app = await buildApp({ config: loadConfig({}), db: down, plans: DEFAULT_PLANS });
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer tk_live_${'a'.repeat(43)}`, 'content-type': 'application/json' },
        payload: JSON.stringify([event()]),
      });
      assert.equal(res.statusCode, 503);
      assert.ok(Number(res.headers['retry-after']) >= 1);
      assert.equal(res.json().code, 'store_unavailable');
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal((await app.inject('/readyz')).statusCode, 503);
      assert.equal((await app.inject('/healthz')).statusCode, 200);
    } finally {
      await app.close();
      await down.close();
    }
  });

  it('BAD-INPUTS 41: a store that goes away mid-life gives 503, not 500', async () => {
    const db = await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2 });
    const { migrate } = await import('../src/storage/migrate.js');
    await migrate(db);
    const other = await startTestApp({ db });
    const tenant = await tenantWithProduct(other.app);
    assert.equal((await postEvents(other.app, tenant.ingestKey, [event()])).statusCode, 200);
    await db.close();
    const res = await postEvents(other.app, tenant.ingestKey, [event()]);
    assert.equal(res.statusCode, 503);
    assert.ok(Number(res.headers['retry-after']) >= 1);
    await other.app.close();
  });

  it(
    'BAD-INPUTS 41: a batch whose write waits past the statement timeout is 503 store_unavailable with Retry-After, never a 500 or a 422; nothing is stored, and the retry is stored and counted once',
    { skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL not set: the statement timeout is PostgreSQL’s' },
    async () => {
      // The tenant is made, and the retry sent, through the suite's app (the default 15 s timeout);
      // only the blocked batch goes through an app whose statements are cancelled after 1 s.
      const tenant = await tenantWithProduct(t.app);
      const db = await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2, statementTimeoutMs: 1000 });
      const slow = await startTestApp({ db });
      const blocker = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await blocker.connect();
      try {
        const batch = [event(), event(), event()];
        // Another transaction has written one of the batch's (tenant, event_id) keys and not yet
        // committed: the batch's INSERT … ON CONFLICT must wait for it to commit or roll back, so
        // it waits past the statement timeout and the server cancels it (57014). Only this test's
        // tenant's rows are touched; every other writer goes on.
        await blocker.query('BEGIN');
        await blocker.query(
          `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id)
           VALUES ($1, $2, $3, '1.0.0', 'ui', 'click', now(), now(), 'actor-1')`,
          [tenant.id, batch[1]!.event_id, tenant.productId],
        );
        const res = await postEvents(slow.app, tenant.ingestKey, batch);
        await blocker.query('ROLLBACK');
        assert.equal(res.statusCode, 503, res.body);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        assert.deepEqual([res.json().status, res.json().code], [503, 'store_unavailable']);
        assert.ok(Number(res.headers['retry-after']) >= 1, `Retry-After: ${res.headers['retry-after']}`);
        assert.equal(res.headers['access-control-allow-origin'], '*');
        assert.equal(await countStored(t.db, tenant.id), 0, 'nothing of the refused batch is stored');

        const retry = await postEvents(t.app, tenant.ingestKey, batch);
        assert.equal(retry.statusCode, 200, retry.body);
        assert.deepEqual(
          retry.json().results.map((r: { status: string; duplicate?: true }) => [r.status, r.duplicate ?? false]),
          batch.map(() => ['accepted', false]),
        );
        assert.equal(await countStored(t.db, tenant.id), batch.length);
        const usage = await t.app.inject({ url: `/admin/v1/tenants/${tenant.id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        assert.equal(usage.json().usage.events, batch.length, 'counted once');
      } finally {
        await blocker.query('ROLLBACK').catch(() => undefined);
        await blocker.end();
        await slow.close();
        await db.close();
      }
    },
  );
});
