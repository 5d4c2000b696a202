// Sessions list, stats and release health, and an exception group's trend, over app.inject against a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); the rollup job runs once for real; nothing is faked. Right answers worked out by hand in the comments.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { actorErasureJob } from '../src/jobs/data-rights.js';
import { createTenant, foldReadModel, get, readOnlyKey, runJob, startTestApp, tenantWithProduct, type TestApp, post as postJson } from './helpers/app.js';

let t: TestApp;
let key: string;
let readerKey: string;
let fingerprint: string;
const sid = (i: number) => `00000000-0000-4000-8000-00000000000${i}`;

// s1 u1 1.0 Mar 2 10:00, ended normal after 60 s              → healthy
// s2 u1 1.0 Mar 2 11:00, a non-fatal exception, normal, 120 s → errored
// s3 u2 1.0 Mar 3 09:00, a fatal exception, normal, 300 s     → crashed
// s4 u3 2.0 Mar 3 12:00, ended by sdk_recovery after 600 s    → abnormal
// s5 u3 2.0 Mar 4 08:00, not ended                            → open
// A third exception of the same group: u3, 2.0, Mar 4 09:00, no session.
before(async () => {
  t = await startTestApp();
  const tenant = await tenantWithProduct(t.app, 'business');
  key = tenant.adminKey;
  readerKey = await readOnlyKey(t.app, tenant.id);
  const post = async (url: string, payload: unknown) => {
    const res = await postJson(t.app, tenant.ingestKey, url, payload);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const start = (i: number, actor: string, version: string, at: string, account?: string) =>
    post('/v1/events/sessions', {
      session_id: sid(i),
      actor_id: actor,
      product: 'app',
      product_version: version,
      started_at: at,
      ...(account && { account_id: account }),
    });
  const end = (i: number, at: string, reason = 'normal') => post('/v1/events/sessions/end', { session_id: sid(i), ended_at: at, end_reason: reason });
  const exception = (id: string, actor: string, version: string, at: string, severity: string, session?: number) =>
    post('/v1/events/exceptions', {
      exception_id: id,
      exception_type: 'TypeError',
      severity,
      message: 'x is undefined',
      occurred_at: at,
      actor_id: actor,
      product: 'app',
      product_version: version,
      ...(session ? { session_id: sid(session) } : {}),
    });
  await start(1, 'u1', '1.0', '2026-03-02T10:00:00Z', 'acme');
  await end(1, '2026-03-02T10:01:00Z');
  await start(2, 'u1', '1.0', '2026-03-02T11:00:00Z');
  await exception('x1', 'u1', '1.0', '2026-03-02T11:01:00Z', 'non_fatal', 2);
  await end(2, '2026-03-02T11:02:00Z');
  await start(3, 'u2', '1.0', '2026-03-03T09:00:00Z');
  fingerprint = (await exception('x2', 'u2', '1.0', '2026-03-03T09:04:00Z', 'fatal', 3)).fingerprint;
  await end(3, '2026-03-03T09:05:00Z');
  await start(4, 'u3', '2.0', '2026-03-03T12:00:00Z');
  await end(4, '2026-03-03T12:10:00Z', 'sdk_recovery');
  await start(5, 'u3', '2.0', '2026-03-04T08:00:00Z');
  await exception('x3', 'u3', '2.0', '2026-03-04T09:00:00Z', 'non_fatal');
  await foldReadModel(t.db);
});
after(async () => t.close());

const RANGE = 'from=2026-03-02&to=2026-03-05';
async function ok(url: string, k = key) {
  const res = await get(t.app, k, url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

describe('sessions', () => {
  it('GET /v1/sessions/stats: count, duration percentiles, end reasons, statuses, per day', async () => {
    const body = await ok(`/v1/sessions/stats?${RANGE}`);
    assert.deepEqual(body.range, { from: '2026-03-02T00:00:00.000Z', to: '2026-03-05T00:00:00.000Z' });
    assert.equal(body.sessions, 5);
    // Ended durations 60, 120, 300, 600 s, interpolated: p50 at rank 1.5 → 120 + 0.5 × 180 = 210;
    // p90 at 2.7 → 300 + 0.7 × 300 = 510; p99 at 2.97 → 300 + 0.97 × 300 = 591.
    assert.deepEqual(body.duration_s, { p50: 210, p90: 510, p99: 591 });
    assert.deepEqual(body.end_reasons, { normal: 3, sdk_recovery: 1, open: 1 });
    assert.deepEqual(body.statuses, { healthy: 1, errored: 1, crashed: 1, abnormal: 1, open: 1 });
    assert.deepEqual(body.data, [
      { date: '2026-03-02', sessions: 2 },
      { date: '2026-03-03', sessions: 2 },
      { date: '2026-03-04', sessions: 1 },
    ]);
  });

  it('GET /v1/sessions/stats in a zone: local days and weeks', async () => {
    // Honolulu is UTC−10: the starts fall at 00:00 and 01:00 on 2 March, 23:00 on 2 March (09:00Z
    // on the 3rd), 02:00 and 22:00 on 3 March; its 2–5 March holds all five.
    const days = await ok(`/v1/sessions/stats?${RANGE}&tz=Pacific/Honolulu`);
    assert.equal(days.sessions, 5);
    assert.deepEqual(days.data, [
      { date: '2026-03-02', sessions: 3 },
      { date: '2026-03-03', sessions: 2 },
      { date: '2026-03-04', sessions: 0 },
    ]);
    const weeks = await ok(`/v1/sessions/stats?${RANGE}&tz=Pacific/Honolulu&interval=week`);
    assert.deepEqual(weeks.data, [{ date: '2026-03-02', sessions: 5 }]);
  });

  it('GET /v1/sessions/stats in a zone three quarters off the hour (Kathmandu, UTC+5:45): local hours', async () => {
    // Its own tenant. Starts at 10:10Z, 10:20Z and 10:50Z are 15:55, 16:05 and 16:35 in Kathmandu:
    // one session in the local hour from 15:00, two in the one from 16:00 (a UTC hour's sessions
    // fall in two local hours; counted per UTC quarter hour they do not).
    const other = await tenantWithProduct(t.app, 'business');
    for (const [i, at] of ['10:10', '10:20', '10:50'].entries()) {
      const res = await postJson(t.app, other.ingestKey, '/v1/events/sessions', {
        session_id: `00000000-0000-4000-8000-00000000010${i}`,
        actor_id: 'k1',
        product: 'app',
        product_version: '1.0',
        started_at: `2026-03-02T${at}:00Z`,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    await foldReadModel(t.db);
    const body = await ok('/v1/sessions/stats?from=2026-03-02T15:00&to=2026-03-02T17:00&tz=Asia/Kathmandu&interval=hour', other.adminKey);
    assert.equal(body.sessions, 3);
    assert.deepEqual(body.data, [
      { date: '2026-03-02T15:00', sessions: 1 },
      { date: '2026-03-02T16:00', sessions: 2 },
    ]);
  });

  it('GET /v1/sessions/release-health: crash-free sessions and actors and adoption per version', async () => {
    const body = await ok(`/v1/sessions/release-health?${RANGE}`);
    // 1.0: 3 sessions (1 crashed) by u1, u2 (u2 crashed): 1 − 1/3 = 66.6667 %, 1 − 1/2 = 50 %;
    //      adoption 3/5 sessions = 60 %, 2/3 actors = 66.6667 %.
    // 2.0: 2 sessions by u3, none crashed (one abnormal, one open): 100 %, 100 %; 2/5 = 40 %, 1/3 = 33.3333 %.
    assert.deepEqual(
      body.data.map((r: Record<string, unknown>) => [
        r.product_version,
        r.sessions,
        r.actors,
        r.crashed_sessions,
        r.abnormal_sessions,
        r.crash_free_sessions,
        r.crash_free_actors,
        r.adoption,
      ]),
      [
        ['1.0', 3, 2, 1, 0, 66.6667, 50, { sessions: 60, actors: 66.6667 }],
        ['2.0', 2, 1, 0, 1, 100, 100, { sessions: 40, actors: 33.3333 }],
      ],
    );
    // Filtered to one version, its adoption is still its share of every version's sessions and actors.
    const one = await ok(`/v1/sessions/release-health?${RANGE}&product=app&version=2.0`);
    assert.deepEqual(
      one.data.map((r: Record<string, unknown>) => [r.product_version, r.sessions, r.adoption]),
      [['2.0', 2, { sessions: 40, actors: 33.3333 }]],
    );
  });

  it('release health from the sets of actors: partial days, a stale day, an identify link and an erasure, against rm_sessions', async () => {
    const tenant = await tenantWithProduct(t.app);
    const send = async (url: string, payload: unknown) => assert.equal((await postJson(t.app, tenant.ingestKey, url, payload)).statusCode, 200, url);
    const sessions: [number, string, string, string][] = [
      [1, 'u1', '1.0', '2026-03-02T10:00:00Z'],
      [2, 'u2', '1.0', '2026-03-02T23:30:00Z'],
      [3, 'u1', '2.0', '2026-03-03T12:00:00Z'],
      [4, 'anon', '1.0', '2026-03-03T08:00:00Z'],
      [5, 'u3', '2.0', '2026-03-04T03:00:00Z'],
      [6, 'u2', '1.0', '2026-03-04T15:00:00Z'],
    ];
    for (const [i, actor, version, at] of sessions)
      await send('/v1/events/sessions', { session_id: sid(i), actor_id: actor, product: 'app', product_version: version, started_at: at });
    const fatal = { exception_id: 'f1', exception_type: 'E', severity: 'fatal', occurred_at: '2026-03-02T10:05:00Z', session_id: sid(1) };
    await send('/v1/events/exceptions', { ...fatal, actor_id: 'u1', product: 'app', product_version: '1.0' });
    await foldReadModel(t.db);
    const [built] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM rm_session_sets WHERE tenant_id = $1', [tenant.id]);
    assert.equal(built!.n, 5, 'a set row per (day, version): Mar 2 1.0; Mar 3 1.0, 2.0; Mar 4 1.0, 2.0');
    const health = async (query: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/sessions/release-health?${query}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      return { range: body.range as { from: string; to: string }, data: body.data as Record<string, unknown>[] };
    };
    const shape = (data: Record<string, unknown>[]) =>
      data.map((r) => [r.product_version, r.sessions, r.actors, r.crashed_sessions, r.crashed_actors, r.adoption]);
    // The same numbers from rm_sessions' rows of the answer's range.
    const recomputed = async (range: { from: string; to: string }, version?: string) => {
      const where = 'tenant_id = $1 AND started_at >= $2 AND started_at < $3';
      const rows = await t.db.query<{ v: string; sessions: number; actors: number; crashed: number; crashed_actors: number }>(
        `SELECT product_version AS v, count(*)::int AS sessions, count(DISTINCT actor_id)::int AS actors, count(*) FILTER (WHERE status = 'crashed')::int AS crashed,
                count(DISTINCT actor_id) FILTER (WHERE status = 'crashed')::int AS crashed_actors
           FROM rm_sessions WHERE ${where} GROUP BY 1 ORDER BY count(*) DESC, 1`,
        [tenant.id, range.from, range.to],
      );
      const [all] = await t.db.query<{ sessions: number; actors: number }>(
        `SELECT count(*)::int AS sessions, count(DISTINCT actor_id)::int AS actors FROM rm_sessions WHERE ${where}`,
        [tenant.id, range.from, range.to],
      );
      const pct = (n: number, d: number) => Math.round((n / d) * 1_000_000) / 10_000;
      return rows
        .filter((r) => version === undefined || r.v === version)
        .map((r) => [r.v, r.sessions, r.actors, r.crashed, r.crashed_actors, { sessions: pct(r.sessions, all!.sessions), actors: pct(r.actors, all!.actors) }]);
    };
    const queries = [
      'from=2026-03-02&to=2026-03-05', // whole UTC days: sets alone
      'from=2026-03-02&to=2026-03-05&tz=America/New_York', // Mar 3 and 4 from sets, the ends from rows
      'from=2026-03-02T12:00:00Z&to=2026-03-04T12:00:00Z', // Mar 3 from sets
      'from=2026-03-02T11:00:00Z&to=2026-03-02T23:59:00Z', // no whole day
      'from=2026-03-02&to=2026-03-05&product=app&version=1.0',
    ];
    const agree = async (why: string) => {
      for (const query of queries) {
        const { range, data } = await health(query);
        assert.deepEqual(shape(data), await recomputed(range, query.includes('version=') ? '1.0' : undefined), `${why}: ${query}`);
      }
    };
    // By hand, Mar 2–4 UTC: 1.0 s1 (u1, crashed), s2 (u2), s4 (anon), s6 (u2): 4 sessions, 3 actors, 1 crashed;
    // 2.0 s3 (u1), s5 (u3): 2 sessions, 2 actors. Every version: 6 sessions, 4 actors.
    assert.deepEqual(shape((await health(queries[0]!)).data), [
      ['1.0', 4, 3, 1, 1, { sessions: 66.6667, actors: 75 }],
      ['2.0', 2, 2, 0, 0, { sessions: 33.3333, actors: 50 }],
    ]);
    await agree('built');
    // A day changed since its sets were built is read from rows (here: marked as a change would mark it).
    await t.db.query("INSERT INTO rm_session_days_stale (tenant_id, day) VALUES ($1, '2026-03-03') ON CONFLICT DO NOTHING", [tenant.id]);
    await agree('Mar 3 stale');
    // anon is u2's device: 1.0 has u1 and u2; every version u1, u2, u3.
    await send('/v1/actors/identify', { anonymous_actor_id: 'anon', identified_actor_id: 'u2', product: 'app', product_version: '1.0' });
    await foldReadModel(t.db);
    assert.deepEqual(shape((await health(queries[0]!)).data), [
      ['1.0', 4, 2, 1, 1, { sessions: 66.6667, actors: 66.6667 }],
      ['2.0', 2, 2, 0, 0, { sessions: 33.3333, actors: 66.6667 }],
    ]);
    await agree('after the link');
    // u1 erased: its days are stale until the job builds them again; right either way.
    const erase = await t.app.inject({ method: 'DELETE', url: '/v1/actors/u1', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.equal(erase.statusCode, 202, erase.body);
    await runJob(t.db, actorErasureJob());
    const afterErasure = [
      ['1.0', 3, 1, 0, 0, { sessions: 75, actors: 50 }],
      ['2.0', 1, 1, 0, 0, { sessions: 25, actors: 50 }],
    ];
    assert.deepEqual(shape((await health(queries[0]!)).data), afterErasure);
    await agree('erased, not built');
    await foldReadModel(t.db);
    assert.deepEqual(shape((await health(queries[0]!)).data), afterErasure);
    await agree('erased and built');
    const [left] = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM rm_actor_ordinals WHERE tenant_id = $1 AND actor_id = 'u1'", [tenant.id]);
    assert.equal(left!.n, 0, "u1's ordinal went with it");
  });

  it('compare=previous: stats, release health and the exception trend answer the previous day too; the list refuses it', async () => {
    // March 4 against March 3. Mar 4: s5 (u3, 2.0, open) and x3 (non-fatal, u3). Mar 3: s3 (u2, 1.0,
    // crashed, 300 s), s4 (u3, 2.0, abnormal, 600 s) and x2 (fatal, u2): p50 of 300 and 600 = 450.
    const q = 'from=2026-03-04&to=2026-03-05&compare=previous';
    const prevRange = { from: '2026-03-03T00:00:00.000Z', to: '2026-03-04T00:00:00.000Z' };
    const stats = await ok(`/v1/sessions/stats?${q}`);
    assert.deepEqual([stats.sessions, stats.duration_s.p50, stats.statuses.open], [1, null, 1]);
    assert.deepEqual(stats.compare.range, prevRange);
    assert.deepEqual(
      [stats.compare.sessions, stats.compare.duration_s.p50, stats.compare.statuses.crashed, stats.compare.statuses.abnormal, stats.compare.data],
      [2, 450, 1, 1, [{ date: '2026-03-03', sessions: 2 }]],
    );
    const health = await ok(`/v1/sessions/release-health?${q}`);
    const rows = (b: { data: Record<string, unknown>[] }) => b.data.map((r) => [r.product_version, r.sessions, r.crash_free_sessions, r.crash_free_actors]);
    assert.deepEqual(rows(health), [['2.0', 1, 100, 100]]);
    assert.deepEqual(health.compare.range, prevRange);
    assert.deepEqual(rows(health.compare), [
      ['1.0', 1, 0, 0],
      ['2.0', 1, 100, 100],
    ]);
    const trend = await ok(`/v1/exceptions/${fingerprint}?${q}`);
    assert.deepEqual(trend.total, { count: 1, fatal: 0, actors: 1 });
    assert.deepEqual([trend.compare.range, trend.compare.total], [prevRange, { count: 1, fatal: 1, actors: 1 }]);
    // No compare key without the parameter.
    assert.equal('compare' in (await ok(`/v1/sessions/stats?${RANGE}`)), false);
    const list = await get(t.app, key, `/v1/sessions?${q}`);
    assert.deepEqual([list.statusCode, list.json().errors?.[0]?.field], [400, 'compare'], list.body);
  });

  it('GET /v1/sessions: newest first, paged by cursor, filtered by status', async () => {
    const first = await ok(`/v1/sessions?${RANGE}&limit=2`);
    assert.deepEqual(
      first.data.map((s: { session_id: string }) => s.session_id),
      [sid(5), sid(4)],
    );
    const second = await ok(`/v1/sessions?${RANGE}&limit=2&cursor=${first.next_cursor}`);
    assert.deepEqual(
      second.data.map((s: { session_id: string }) => s.session_id),
      [sid(3), sid(2)],
    );
    const last = await ok(`/v1/sessions?${RANGE}&limit=2&cursor=${second.next_cursor}`);
    assert.deepEqual(
      last.data.map((s: { session_id: string }) => s.session_id),
      [sid(1)],
    );
    assert.equal(last.next_cursor, null);
    const crashed = await ok(`/v1/sessions?${RANGE}&status=crashed`);
    assert.deepEqual(
      crashed.data.map((s: { session_id: string; duration_s: number; errors: number }) => [s.session_id, s.duration_s, s.errors]),
      [[sid(3), 300, 1]],
    );
    const bad = await get(t.app, key, `/v1/sessions?cursor=${Buffer.from('["x"]').toString('base64url')}`);
    assert.equal(bad.statusCode, 400);
  });

  it('GET /v1/sessions?actor_id: an anonymous id linked by identify finds its sessions, listed under the user', async () => {
    const tenant = await tenantWithProduct(t.app);
    const start = { session_id: sid(7), actor_id: 'anon-7', product: 'app', product_version: '1.0', started_at: '2026-03-02T10:00:00Z' };
    assert.equal((await postJson(t.app, tenant.ingestKey, '/v1/events/sessions', start)).statusCode, 200);
    const link = { anonymous_actor_id: 'anon-7', identified_actor_id: 'user-7', product: 'app', product_version: '1.0' };
    assert.equal((await postJson(t.app, tenant.ingestKey, '/v1/actors/identify', link)).statusCode, 200);
    await foldReadModel(t.db);
    for (const actor of ['anon-7', 'user-7']) {
      const res = await get(t.app, tenant.adminKey, `/v1/sessions?${RANGE}&actor_id=${actor}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        res.json().data.map((s: { session_id: string; actor_id: string }) => [s.session_id, s.actor_id]),
        [[sid(7), 'user-7']],
        actor,
      );
    }
    assert.deepEqual((await get(t.app, tenant.adminKey, `/v1/sessions?${RANGE}&actor_id=anon-8`)).json().data, []);
  });

  it('GET /v1/sessions: account and license ids only for keys that may see accounts (view_accounts)', async () => {
    const admin = await ok(`/v1/sessions?${RANGE}`);
    const s1 = admin.data.find((s: { session_id: string }) => s.session_id === sid(1));
    assert.deepEqual([s1.account_id, s1.license_id], ['acme', null]);
    const reader = await ok(`/v1/sessions?${RANGE}`, readerKey);
    assert.equal(reader.data.length, 5);
    for (const s of reader.data) assert.ok(!('account_id' in s) && !('license_id' in s), JSON.stringify(s));
  });

  it('GET /v1/exceptions/{fingerprint}: per day, first and last version; the list is unchanged', async () => {
    const body = await ok(`/v1/exceptions/${fingerprint}?${RANGE}`);
    assert.equal(body.first_version, '1.0');
    assert.equal(body.last_version, '2.0');
    assert.deepEqual(body.total, { count: 3, fatal: 1, actors: 3 });
    assert.deepEqual(body.data, [
      { date: '2026-03-02', count: 1, fatal: 0, actors: 1 },
      { date: '2026-03-03', count: 1, fatal: 1, actors: 1 },
      { date: '2026-03-04', count: 1, fatal: 0, actors: 1 },
    ]);
    const list = await ok('/v1/exceptions');
    assert.equal(list.data[0].count, 3);
  });

  it('another tenant sees none of it', async () => {
    const other = await createTenant(t.app, 'business');
    assert.deepEqual((await ok(`/v1/sessions?${RANGE}`, other.adminKey)).data, []);
    assert.equal((await ok(`/v1/sessions/stats?${RANGE}`, other.adminKey)).sessions, 0);
    assert.deepEqual((await ok(`/v1/sessions/release-health?${RANGE}`, other.adminKey)).data, []);
    const res = await get(t.app, other.adminKey, `/v1/exceptions/${fingerprint}`);
    assert.equal(res.statusCode, 404);
    const starter = await createTenant(t.app, 'starter');
    assert.equal((await get(t.app, starter.adminKey, '/v1/sessions?account_id=a')).statusCode, 402);
    assert.equal((await get(t.app, key, '/v1/sessions?name=x')).statusCode, 400);
  });
});
