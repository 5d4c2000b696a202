// Data rights over HTTP on a real store (PGlite in memory, or TEST_DATABASE_URL): erasure, export and
// raw-event retention. The jobs run for real (runJob: startJobs(...).runOnce) instead of on their timers;
// the clock of the retention job is real, the events' timestamps are placed around its cutoff.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { actorErasureJob, eventRetentionJob } from '../src/jobs/data-rights.js';
import { rollupJob } from '../src/jobs/rollups.js';
import { DEFAULT_PLANS } from '../src/domain/plans.js';
import { LOCKS } from '../src/storage/db.js';
import { ADMIN_TOKEN, event, get, postEvents, runJob, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const DAY = 86_400_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const ENV = Buffer.from(JSON.stringify({ os: 'Linux', locale: 'de-DE' })).toString('base64');

/** Rows per raw and derived table that name one of `actors`, for the tenant. */
async function holdings(tenantId: string, actors: string[]): Promise<Record<string, number>> {
  const n = async (sql: string, params: unknown[] = [tenantId, actors]) => (await t.db.query<{ n: number }>(sql, params))[0]!.n;
  return {
    events: await n('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    sessions: await n('SELECT count(*)::int AS n FROM sessions WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    exceptions: await n('SELECT count(*)::int AS n FROM exceptions WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    environments: await n('SELECT count(*)::int AS n FROM environments WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    actor_links: await n('SELECT count(*)::int AS n FROM actor_links WHERE tenant_id = $1 AND (anonymous_actor_id = ANY($2) OR identified_actor_id = ANY($2))'),
    invalid_events: await n(
      "SELECT count(*)::int AS n FROM invalid_events WHERE tenant_id = $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) a WHERE strpos(payload, '\"' || a || '\"') > 0)",
    ),
    rm_actor_days: await n('SELECT count(*)::int AS n FROM rm_actor_days WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    rm_actor_months: await n('SELECT count(*)::int AS n FROM rm_actor_months WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    rm_actor_first: await n('SELECT count(*)::int AS n FROM rm_actor_first WHERE tenant_id = $1 AND actor_id = ANY($2)'),
    rm_sessions: await n('SELECT count(*)::int AS n FROM rm_sessions WHERE tenant_id = $1 AND actor_id = ANY($2)'),
  };
}

/** alice (and her device's anonymous id anon-a, linked by identify) and bob, with events, a session, an exception, an environment and a dead letter each. */
async function fixture() {
  const tenant = await tenantWithProduct(t.app, 'business');
  const headers = { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json', 'x-environment-data': ENV };
  const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers, payload });
  for (const actor of ['alice', 'anon-a', 'bob']) {
    const e = (extra: object = {}) => event({ actor_id: actor, account_id: 'acme', license_id: 'L1', timestamp: ago(3_600_000), ...extra });
    assert.equal((await postEvents(t.app, tenant.ingestKey, [e(), e({ name: 'save' })], { headers: { 'x-environment-data': ENV } })).statusCode, 200);
    assert.equal((await postEvents(t.app, tenant.ingestKey, [e({ properties: { accountId: 'x' } })])).statusCode, 207, 'a dead letter that names the actor');
    const sid = uuidv7();
    assert.equal(
      (
        await post('/v1/events/sessions', {
          session_id: sid,
          actor_id: actor,
          product: 'app',
          product_version: '1.0.0',
          started_at: ago(3_600_000),
          account_id: 'acme',
        })
      ).statusCode,
      200,
    );
    const ex = {
      exception_id: uuidv7(),
      exception_type: 'TypeError',
      severity: 'fatal',
      occurred_at: ago(3_600_000),
      actor_id: actor,
      product: 'app',
      product_version: '1.0.0',
      account_id: 'acme',
    };
    assert.equal((await post('/v1/events/exceptions', ex)).statusCode, 200);
  }
  const link = { anonymous_actor_id: 'anon-a', identified_actor_id: 'alice', identified_at: ago(1000), product: 'app', product_version: null };
  assert.equal((await post('/v1/actors/identify', link)).statusCode, 200);
  await runJob(t.db, rollupJob(60));
  return tenant;
}

describe('erasure: DELETE /v1/actors/{actorId}', () => {
  it("erases the actor, its linked anonymous id and its links from raw and derived data; bob's data is untouched; audited", async () => {
    const tenant = await fixture();
    const bobBefore = await holdings(tenant.id, ['bob']);
    assert.ok(
      Object.values(await holdings(tenant.id, ['alice', 'anon-a'])).every((n) => n > 0),
      'the fixture fills every table',
    );
    const [factsBefore] = await t.db.query<{ n: number }>('SELECT coalesce(sum(events), 0)::int AS n FROM rm_usage_days WHERE tenant_id = $1', [tenant.id]);
    assert.equal(factsBefore!.n, 6);

    const res = await t.app.inject({ method: 'DELETE', url: '/v1/actors/alice', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.equal(res.statusCode, 202, res.body);
    const erasure = res.json();
    assert.equal(erasure.status, 'pending');
    assert.equal(res.headers.location, erasure.status_url);
    assert.equal(erasure.status_url, `/v1/actor-erasures/${erasure.id}`);

    await runJob(t.db, actorErasureJob());
    const done = (await get(t.app, tenant.adminKey, erasure.status_url)).json();
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.ok(done.completed_at);
    assert.ok(done.erased.events === 4 && done.erased.actor_links === 1 && done.erased.sessions === 2, JSON.stringify(done.erased));

    assert.deepEqual(
      Object.values(await holdings(tenant.id, ['alice', 'anon-a'])),
      Object.values(await holdings(tenant.id, ['nobody'])),
      'nothing of alice is left',
    );
    assert.deepEqual(await holdings(tenant.id, ['bob']), bobBefore, 'bob untouched');
    const [facts] = await t.db.query<{ n: number }>('SELECT coalesce(sum(events), 0)::int AS n FROM rm_usage_days WHERE tenant_id = $1', [tenant.id]);
    assert.equal(facts!.n, 2, "the derived counts lost alice's events, and only hers");
    await runJob(t.db, rollupJob(60));
    const acme = (await get(t.app, tenant.adminKey, '/v1/accounts/acme')).json();
    assert.deepEqual([acme.counts.events, acme.counts.active_actors], [2, 1], JSON.stringify(acme));

    // The audit keeps the request and a digest, never the erased id.
    const [audit] = await t.db.query<{ actor_id: string | null; actor_digest: string; requested_by: string }>(
      'SELECT actor_id, actor_digest, requested_by FROM actor_erasures WHERE id = $1',
      [erasure.id],
    );
    assert.equal(audit!.actor_id, null);
    assert.match(audit!.actor_digest, /^[0-9a-f]{64}$/);
    assert.ok(audit!.requested_by);
  });

  it("moves an account's first day on a version (the versions report's upgrade lag) to what is left of its events", async () => {
    // Account acme ran 1.0 (released 10 days ago) first through alice, 3 days ago, then through bob, 1 day ago. Once
    // alice is erased, acme first ran 1.0 the day bob did.
    const tenant = await tenantWithProduct(t.app, 'business');
    const day = (ms: number) => ago(ms).slice(0, 10);
    const release = day(10 * DAY);
    const registered = await t.app.inject({
      method: 'POST',
      url: '/v1/version-registrations',
      headers: { authorization: `Bearer ${tenant.adminKey}` },
      payload: { product: 'app', product_version: '1.0.0', release_date: release },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    const e = (actor: string, ms: number) => event({ actor_id: actor, account_id: 'acme', product_version: '1.0.0', timestamp: ago(ms) });
    assert.equal((await postEvents(t.app, tenant.ingestKey, [e('alice', 3 * DAY), e('bob', DAY)])).statusCode, 200);
    await runJob(t.db, rollupJob(60));
    const lag = async () => {
      const res = await get(t.app, tenant.adminKey, '/v1/reports/versions?product=app&range=7d');
      assert.equal(res.statusCode, 200, res.body);
      return res.json().upgrade_lag;
    };
    const daysSince = (d: string) => (Date.parse(d) - Date.parse(release)) / DAY;
    const expect = (d: string) => [{ version: '1.0.0', released_on: release, accounts: 1, median_lag_days: daysSince(d), p90_lag_days: daysSince(d) }];
    assert.deepEqual(await lag(), expect(day(3 * DAY)));

    const res = await t.app.inject({ method: 'DELETE', url: '/v1/actors/alice', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.equal(res.statusCode, 202, res.body);
    await runJob(t.db, actorErasureJob());
    assert.equal((await get(t.app, tenant.adminKey, res.json().status_url)).json().status, 'done');
    assert.deepEqual(await lag(), expect(day(DAY)));
  });

  it('needs manage_products; another tenant cannot see the erasure', async () => {
    const a = await tenantWithProduct(t.app, 'business');
    const b = await tenantWithProduct(t.app, 'business');
    assert.equal((await t.app.inject({ method: 'DELETE', url: '/v1/actors/x', headers: { authorization: `Bearer ${a.ingestKey}` } })).statusCode, 403);
    const misspelt = await t.app.inject({ method: 'DELETE', url: '/v1/actors/x?bogus=1', headers: { authorization: `Bearer ${a.adminKey}` } });
    assert.equal(misspelt.statusCode, 400, 'an unknown parameter is refused before anything is queued');
    assert.equal(misspelt.json().errors[0].field, 'bogus');
    const res = await t.app.inject({ method: 'DELETE', url: '/v1/actors/x', headers: { authorization: `Bearer ${a.adminKey}` } });
    assert.equal((await get(t.app, b.adminKey, res.json().status_url)).statusCode, 404);
    assert.equal((await get(t.app, a.adminKey, '/v1/actor-erasures/not-a-uuid')).statusCode, 404);
    assert.equal((await get(t.app, b.adminKey, '/v1/actors/x/export')).statusCode, 200, 'an empty export, not an error');
  });
});

describe(
  'erasure and the rollup job take turns',
  { skip: process.env.TEST_DATABASE_URL ? false : 'one connection on the embedded store: nothing runs between' },
  () => {
    it('an erasure waits while a read-model write holds the lock, so a step that read the actor cannot write it back after', async () => {
      const tenant = await fixture();
      const res = await t.app.inject({ method: 'DELETE', url: '/v1/actors/alice', headers: { authorization: `Bearer ${tenant.adminKey}` } });
      assert.equal(res.statusCode, 202, res.body);
      // Another session stands in for a rollup step in flight: it holds the lock every step takes first.
      const step = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await step.connect();
      try {
        await step.query('BEGIN');
        await step.query('SELECT pg_advisory_xact_lock($1)', [LOCKS.readModelWrites]);
        const erasing = runJob(t.db, actorErasureJob());
        await new Promise((r) => setTimeout(r, 500));
        assert.equal((await get(t.app, tenant.adminKey, res.json().status_url)).json().status, 'pending', 'the erasure waits for the step');
        await step.query('COMMIT');
        await erasing;
      } finally {
        await step.end();
      }
      assert.equal((await get(t.app, tenant.adminKey, res.json().status_url)).json().status, 'done');
      assert.deepEqual(Object.values(await holdings(tenant.id, ['alice', 'anon-a'])), Object.values(await holdings(tenant.id, ['nobody'])));
    });

    it("the rollup job's step waits while an erasure's transaction holds the lock", async () => {
      const tenant = await tenantWithProduct(t.app, 'business');
      assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'carol', timestamp: ago(60_000) })])).statusCode, 200);
      const erasure = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await erasure.connect();
      try {
        await erasure.query('BEGIN');
        await erasure.query('SELECT pg_advisory_xact_lock($1)', [LOCKS.readModelWrites]);
        const folding = runJob(t.db, rollupJob(60));
        const first = await Promise.race([folding.then(() => 'job'), new Promise((r) => setTimeout(() => r('waiting'), 500))]);
        assert.equal(first, 'waiting', 'the step waits for the erasure');
        await erasure.query('COMMIT');
        await folding;
      } finally {
        await erasure.end();
      }
      assert.equal((await holdings(tenant.id, ['carol'])).rm_actor_days, 1, 'folded once the erasure ended');
    });
  },
);

describe('export: GET /v1/actors/{actorId}/export', () => {
  it("is NDJSON of every record of the actor and its linked anonymous id, and nothing of bob's", async () => {
    const tenant = await fixture();
    const res = await get(t.app, tenant.adminKey, '/v1/actors/alice/export');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/x-ndjson/);
    const lines = res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; record: Record<string, unknown> });
    const count = (type: string) => lines.filter((l) => l.type === type).length;
    assert.deepEqual([count('event'), count('session'), count('exception'), count('identity_link'), count('environment')], [4, 2, 2, 1, 4]);
    assert.ok(lines.every((l) => JSON.stringify(l.record).includes('alice') || JSON.stringify(l.record).includes('anon-a')));
    assert.ok(!res.body.includes('bob'));
    assert.ok(lines.every((l) => !('tenant_id' in l.record)));
    const e = lines.find((l) => l.type === 'event')!.record;
    assert.ok(e.event_id && e.occurred_at && e.properties, JSON.stringify(e));
    assert.equal((await get(t.app, tenant.ingestKey, '/v1/actors/alice/export')).statusCode, 403);
  });

  it('an unknown query parameter is a 400 naming it, on the export and the erasure status alike (CONTRACT.md)', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const erasure = await t.app.inject({ method: 'DELETE', url: '/v1/actors/x', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    for (const url of ['/v1/actors/alice/export?format=csv', `${erasure.json().status_url}?verbose=1`]) {
      const res = await get(t.app, tenant.adminKey, url);
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.json().code, 'validation_error');
      assert.deepEqual(
        res.json().errors.map((e: { field: string }) => e.field),
        [url.split('?')[1]!.split('=')[0]],
      );
    }
  });
});

describe('raw-event retention', () => {
  it("deletes a tenant's events older than its retention, keeps newer ones and other tenants' (default: forever)", async () => {
    const kept = await tenantWithProduct(t.app, 'business');
    const limited = await tenantWithProduct(t.app, 'business');
    for (const tenant of [kept, limited]) {
      const res = await postEvents(t.app, tenant.ingestKey, [
        event({ timestamp: ago(40 * DAY) }),
        event({ timestamp: ago(20 * DAY) }),
        event({ timestamp: ago(DAY) }),
      ]);
      assert.equal(res.statusCode, 200);
    }
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/tenants/${limited.id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { event_retention_days: 30 },
    });
    assert.equal(patch.json().event_retention_days, 30);
    await runJob(t.db, eventRetentionJob(0, DEFAULT_PLANS));
    const left = async (id: string) => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [id]))[0]!.n;
    assert.equal(await left(limited.id), 2);
    assert.equal(await left(kept.id), 3, 'no retention set: kept forever');

    // The server-wide default applies where neither the tenant nor its plan sets one; a plan's setting wins over it.
    await runJob(t.db, eventRetentionJob(10, DEFAULT_PLANS));
    assert.equal(await left(kept.id), 1);
    assert.equal(await left(limited.id), 2, "the tenant's own 30 days win over the default");
  });
});
