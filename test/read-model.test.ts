// The read model against raw events, on a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); the rollup job runs for real, and a crash is a fold whose transaction throws.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyBaseLogger } from 'fastify';
import { compactDay, mergeMonthsStep } from '../src/storage/read-model/compact.js';
import { LOCKS } from '../src/storage/db.js';
import { foldStep, foldStepDone } from '../src/storage/rollups.js';
import type { RollupOptions } from '../src/jobs/rollups.js';
import { event, foldReadModel, post, postEvents, SILENT_LOG, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;

/** Links an anonymous actor to a user (identify), asserting 200. */
async function identify(ingestKey: string, anonymous: string, user: string, identifiedAt: string) {
  const body = { anonymous_actor_id: anonymous, identified_actor_id: user, identified_at: identifiedAt, product: 'app', product_version: '1.0.0' };
  assert.equal((await post(t.app, ingestKey, '/v1/actors/identify', body)).statusCode, 200);
}
before(async () => (t = await startTestApp()));
after(async () => t.close());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Fixed instants, so that days are known: "today" is 2 hours ago, the late events 10 days before.
const base = Date.now() - 2 * HOUR;
const at = (ms: number) => new Date(base + ms).toISOString();
const dayOf = (ms: number) => new Date(base + ms).toISOString().slice(0, 10);

/** One run of the rollup job, slices of `sliceMs` and `width` transaction ids first, no VACUUM wait; with `mergeKeys`, month merges of at most so many keys, each step logged. */
async function runJob(sliceMs = 10_000, width = 256, log?: FastifyBaseLogger, mergeKeys?: number): Promise<void> {
  await foldReadModel(t.db, { sliceMs, initialWidth: width, vacuumEveryMs: 0, ...(mergeKeys !== undefined && { mergeKeys, slowStepMs: 0.001 }) }, log);
}

/** What a fold step takes whole: every range summarised, every ended transaction folded, in one slice. */
const WHOLE = { cursor: new Map(), ranges: 1_000_000, width: Number.MAX_SAFE_INTEGER, until: undefined, budget: Number.MAX_SAFE_INTEGER };

/** Folds every row written so far, in one step of the job's own fold, with no compaction or merge after it. */
async function foldOnly(): Promise<void> {
  await t.db.tryWithLock(LOCKS.rollups, (s) => s.script(foldStep({ ...WHOLE, cursor: new Map() }), { derived: true }));
}

/** One step of rm_actor_months' merge, as the job runs it: the keys it merged. */
async function mergeStep(limit: number): Promise<number> {
  const rows = await t.db.tryWithLock(LOCKS.rollups, (s) => s.script(mergeMonthsStep(limit), { derived: true }));
  return Number(rows!.rows.merged![0]!.keys);
}

/** Merge steps of `limit` keys until one finds fewer (none left); at most 100 (a merge that leaves its keys unmerged would go on). */
async function mergeAll(limit: number): Promise<void> {
  for (let n = 0; n < 100; n++) if ((await mergeStep(limit)) < limit) return;
  assert.fail('the merge never ended');
}

/** rm_actor_months of a tenant: its rows, its keys, its rows not merged yet, and the keys that have one. */
async function monthRows(tenantId: string): Promise<{ rows: number; keys: number; unmerged: number; due: number }> {
  const [r] = await t.db.query<{ rows: number; keys: number; unmerged: number; due: number }>(
    `SELECT count(*)::int AS rows, count(DISTINCT (month, actor_id, product_id, account_id, license_id))::int AS keys,
            count(*) FILTER (WHERE NOT merged)::int AS unmerged,
            count(DISTINCT (month, actor_id, product_id, account_id, license_id)) FILTER (WHERE NOT merged)::int AS due
       FROM rm_actor_months WHERE tenant_id = $1`,
    [tenantId],
  );
  return r!;
}

/**
 * A fold that dies midway: the job's own fold step (one script: on the embedded store one message
 * to its worker), whose every statement ran, then one that fails, so nothing of it stays.
 */
async function crashMidFold(): Promise<void> {
  const whole = { ...WHOLE, cursor: new Map() };
  const horizon = async () => (await t.db.query<{ h: number }>('SELECT horizon AS h FROM rollup_state'))[0]!.h;
  const before = await horizon();
  await assert.rejects(
    t.db.tryWithLock(LOCKS.rollups, (s) => s.script([...foldStep(whole), { sql: 'SELECT 1 / 0 AS crash' }], { derived: true })),
    /division by zero/,
  );
  assert.equal(await horizon(), before, 'the horizon did not move');
}

type Row = Record<string, unknown>;
const norm = (rows: Row[]) =>
  rows
    .map((r) =>
      JSON.stringify(
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [
            k,
            v instanceof Date ? v.toISOString() : typeof v === 'bigint' || (typeof v === 'string' && /^-?\d+$/.test(v) && k !== 'version') ? Number(v) : v,
          ]),
        ),
      ),
    )
    .sort();

/** Each derived table, aggregated per key, against the same computed from the raw rows. */
const CHECKS: [string, string, string][] = [
  [
    'events by hour',
    `SELECT hour, product_id::text, product_version, category, name, sum(events)::int AS n, min(first_seen) AS f, max(last_seen) AS l FROM rm_event_hours WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4, 5`,
    `SELECT date_trunc('hour', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour, product_id::text, product_version, category, name, count(*)::int AS n, min(occurred_at) AS f, max(occurred_at) AS l
       FROM events WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4, 5`,
  ],
  [
    'usage by day',
    `SELECT day::text, account_id, license_id, product_version, sum(events)::int AS e, sum(sessions)::int AS s, sum(exceptions)::int AS x FROM rm_usage_days WHERE tenant_id = $1
      GROUP BY 1, 2, 3, 4 HAVING sum(events) <> 0 OR sum(sessions) <> 0 OR sum(exceptions) <> 0`,
    `WITH ctx AS (SELECT DISTINCT ON (session_id) session_id::text AS sid, account_id, license_id FROM events
                   WHERE tenant_id = $1 AND session_id IS NOT NULL AND (account_id IS NOT NULL OR license_id IS NOT NULL) ORDER BY session_id, occurred_at),
          s AS (SELECT (x.started_at AT TIME ZONE 'UTC')::date AS day,
                       CASE WHEN x.account_id IS NULL AND x.license_id IS NULL THEN coalesce(c.account_id, '') ELSE coalesce(x.account_id, '') END AS a,
                       CASE WHEN x.account_id IS NULL AND x.license_id IS NULL THEN coalesce(c.license_id, '') ELSE coalesce(x.license_id, '') END AS l, x.product_version
                  FROM sessions x LEFT JOIN ctx c ON c.sid = x.session_id WHERE x.tenant_id = $1),
          u AS (SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day, coalesce(account_id, '') AS a, coalesce(license_id, '') AS l, product_version, 1 AS e, 0 AS s, 0 AS x FROM events WHERE tenant_id = $1
                UNION ALL SELECT day, a, l, product_version, 0, 1, 0 FROM s
                UNION ALL SELECT (occurred_at AT TIME ZONE 'UTC')::date, coalesce(account_id, ''), coalesce(license_id, ''), product_version, 0, 0, 1 FROM exceptions WHERE tenant_id = $1)
     SELECT day::text, a AS account_id, l AS license_id, product_version, sum(e)::int AS e, sum(s)::int AS s, sum(x)::int AS x FROM u GROUP BY 1, 2, 3, 4`,
  ],
  [
    'features by day',
    `SELECT day::text, account_id, category, name, sum(events)::int AS n FROM rm_feature_days WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4`,
    `SELECT (occurred_at AT TIME ZONE 'UTC')::date::text AS day, coalesce(account_id, '') AS account_id, category, name, count(*)::int AS n
       FROM events WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4`,
  ],
  [
    'actor days',
    `SELECT day::text, actor_id, account_id, license_id, sum(events)::int AS n, bool_or(crashed) AS crashed, bit_or(hours) AS hours FROM rm_actor_days WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4`,
    // hours: bit h for each UTC hour h of the day with an event (exceptions set none).
    `WITH r AS (SELECT e.*, coalesce(k.identified_actor_id, e.actor_id) AS who FROM (
                  SELECT occurred_at, actor_id, account_id, license_id, 1 AS n, false AS fatal FROM events WHERE tenant_id = $1
                  UNION ALL SELECT occurred_at, actor_id, account_id, license_id, 0, severity = 'fatal' FROM exceptions WHERE tenant_id = $1) e
                LEFT JOIN actor_links k ON k.tenant_id = $1 AND k.anonymous_actor_id = e.actor_id)
     SELECT (occurred_at AT TIME ZONE 'UTC')::date::text AS day, who AS actor_id, coalesce(account_id, '') AS account_id, coalesce(license_id, '') AS license_id,
            sum(n)::int AS n, bool_or(fatal) AS crashed,
            coalesce(bit_or(1 << extract(hour FROM occurred_at AT TIME ZONE 'UTC')::int) FILTER (WHERE n = 1), 0) AS hours FROM r GROUP BY 1, 2, 3, 4`,
  ],
  [
    // The version an actor ended each day on: its latest event's (the fold's rows of a key: the one with the latest last_seen).
    'last version per actor day',
    `SELECT DISTINCT ON (1, 2, 3, 4, 5) day::text, actor_id, product_id::text, account_id, license_id, version FROM rm_actor_days WHERE tenant_id = $1 AND events > 0
      ORDER BY 1, 2, 3, 4, 5, last_seen DESC`,
    `SELECT DISTINCT ON (1, 2, 3, 4, 5) (e.occurred_at AT TIME ZONE 'UTC')::date::text AS day, coalesce(k.identified_actor_id, e.actor_id) AS actor_id, e.product_id::text,
            coalesce(e.account_id, '') AS account_id, coalesce(e.license_id, '') AS license_id, e.product_version AS version
       FROM events e LEFT JOIN actor_links k ON k.tenant_id = e.tenant_id AND k.anonymous_actor_id = e.actor_id WHERE e.tenant_id = $1
      ORDER BY 1, 2, 3, 4, 5, e.occurred_at DESC, e.product_version COLLATE "C" DESC`,
  ],
  [
    'actor months',
    // h<k>: bit d - 1 for each day d of the UTC month with an event in UTC hour k (exceptions set none).
    `SELECT month::text, actor_id, product_id::text, account_id, license_id, bit_or(h0) AS h0, bit_or(h1) AS h1, bit_or(h2) AS h2, bit_or(h3) AS h3, bit_or(h4) AS h4, bit_or(h5) AS h5, bit_or(h6) AS h6, bit_or(h7) AS h7, bit_or(h8) AS h8, bit_or(h9) AS h9, bit_or(h10) AS h10, bit_or(h11) AS h11, bit_or(h12) AS h12, bit_or(h13) AS h13, bit_or(h14) AS h14, bit_or(h15) AS h15, bit_or(h16) AS h16, bit_or(h17) AS h17, bit_or(h18) AS h18, bit_or(h19) AS h19, bit_or(h20) AS h20, bit_or(h21) AS h21, bit_or(h22) AS h22, bit_or(h23) AS h23
       FROM rm_actor_months WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4, 5`,
    `SELECT to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-01') AS month, coalesce(k.identified_actor_id, e.actor_id) AS actor_id, e.product_id::text,
            coalesce(e.account_id, '') AS account_id, coalesce(e.license_id, '') AS license_id, coalesce(bit_or(bit) FILTER (WHERE h = 0), 0) AS h0, coalesce(bit_or(bit) FILTER (WHERE h = 1), 0) AS h1, coalesce(bit_or(bit) FILTER (WHERE h = 2), 0) AS h2, coalesce(bit_or(bit) FILTER (WHERE h = 3), 0) AS h3, coalesce(bit_or(bit) FILTER (WHERE h = 4), 0) AS h4, coalesce(bit_or(bit) FILTER (WHERE h = 5), 0) AS h5, coalesce(bit_or(bit) FILTER (WHERE h = 6), 0) AS h6, coalesce(bit_or(bit) FILTER (WHERE h = 7), 0) AS h7, coalesce(bit_or(bit) FILTER (WHERE h = 8), 0) AS h8, coalesce(bit_or(bit) FILTER (WHERE h = 9), 0) AS h9, coalesce(bit_or(bit) FILTER (WHERE h = 10), 0) AS h10, coalesce(bit_or(bit) FILTER (WHERE h = 11), 0) AS h11, coalesce(bit_or(bit) FILTER (WHERE h = 12), 0) AS h12, coalesce(bit_or(bit) FILTER (WHERE h = 13), 0) AS h13, coalesce(bit_or(bit) FILTER (WHERE h = 14), 0) AS h14, coalesce(bit_or(bit) FILTER (WHERE h = 15), 0) AS h15, coalesce(bit_or(bit) FILTER (WHERE h = 16), 0) AS h16, coalesce(bit_or(bit) FILTER (WHERE h = 17), 0) AS h17, coalesce(bit_or(bit) FILTER (WHERE h = 18), 0) AS h18, coalesce(bit_or(bit) FILTER (WHERE h = 19), 0) AS h19, coalesce(bit_or(bit) FILTER (WHERE h = 20), 0) AS h20, coalesce(bit_or(bit) FILTER (WHERE h = 21), 0) AS h21, coalesce(bit_or(bit) FILTER (WHERE h = 22), 0) AS h22, coalesce(bit_or(bit) FILTER (WHERE h = 23), 0) AS h23
       FROM (SELECT *, extract(hour FROM occurred_at AT TIME ZONE 'UTC')::int AS h, 1 << (extract(day FROM occurred_at AT TIME ZONE 'UTC')::int - 1) AS bit
               FROM events WHERE tenant_id = $1) e
       LEFT JOIN actor_links k ON k.tenant_id = e.tenant_id AND k.anonymous_actor_id = e.actor_id GROUP BY 1, 2, 3, 4, 5`,
  ],
  [
    'first seen',
    `SELECT actor_id, first_seen FROM rm_actor_first WHERE tenant_id = $1`,
    `SELECT coalesce(k.identified_actor_id, e.actor_id) AS actor_id, min(e.occurred_at) AS first_seen FROM events e
       LEFT JOIN actor_links k ON k.tenant_id = e.tenant_id AND k.anonymous_actor_id = e.actor_id WHERE e.tenant_id = $1 GROUP BY 1`,
  ],
  [
    'first seen per (category, name)',
    `SELECT actor_id, category, name, first_seen FROM rm_actor_event_first WHERE tenant_id = $1`,
    `SELECT coalesce(k.identified_actor_id, e.actor_id) AS actor_id, category, name, min(e.occurred_at) AS first_seen FROM events e
       LEFT JOIN actor_links k ON k.tenant_id = e.tenant_id AND k.anonymous_actor_id = e.actor_id WHERE e.tenant_id = $1 GROUP BY 1, 2, 3`,
  ],
  [
    'first day per account and version',
    `SELECT product_id::text, product_version, account_id, day::text FROM rm_account_version_first WHERE tenant_id = $1`,
    `SELECT product_id::text, product_version, account_id, min((occurred_at AT TIME ZONE 'UTC')::date)::text AS day FROM events
      WHERE tenant_id = $1 AND account_id <> '' GROUP BY 1, 2, 3`,
  ],
  [
    'sessions',
    `SELECT session_id, actor_id, status FROM rm_sessions WHERE tenant_id = $1 AND started_at IS NOT NULL`,
    `SELECT x.session_id, coalesce(k.identified_actor_id, x.actor_id) AS actor_id,
            CASE WHEN bool_or(e.severity = 'fatal') THEN 'crashed' WHEN x.end_reason IN ('timeout', 'sdk_recovery') THEN 'abnormal'
                 WHEN count(e.exception_id) > 0 THEN 'errored' WHEN x.ended_at IS NOT NULL THEN 'healthy' ELSE 'open' END AS status
       FROM sessions x LEFT JOIN exceptions e ON e.tenant_id = x.tenant_id AND e.session_id = x.session_id
       LEFT JOIN actor_links k ON k.tenant_id = x.tenant_id AND k.anonymous_actor_id = x.actor_id
      WHERE x.tenant_id = $1 GROUP BY x.session_id, 2, x.end_reason, x.ended_at`,
  ],
  [
    // Release health's sets (migration 230): the days built and not changed since, against raw sessions.
    'session sets',
    `SELECT day::text, product_version, sum(sessions)::int AS sessions, sum(crashed)::int AS crashed, sum(bit_count(actors))::int AS actors,
            sum(bit_count(crashed_actors))::int AS crashed_actors
       FROM rm_session_sets WHERE tenant_id = $1 AND day NOT IN (SELECT day FROM rm_session_days_stale WHERE tenant_id = $1) GROUP BY 1, 2`,
    `SELECT day::text, product_version, count(*)::int AS sessions, count(*) FILTER (WHERE crashed)::int AS crashed, count(DISTINCT actor_id)::int AS actors,
            count(DISTINCT actor_id) FILTER (WHERE crashed)::int AS crashed_actors
       FROM (SELECT (x.started_at AT TIME ZONE 'UTC')::date AS day, x.product_version, coalesce(k.identified_actor_id, x.actor_id) AS actor_id,
                    coalesce(bool_or(e.severity = 'fatal'), false) AS crashed
               FROM sessions x LEFT JOIN exceptions e ON e.tenant_id = x.tenant_id AND e.session_id = x.session_id
               LEFT JOIN actor_links k ON k.tenant_id = x.tenant_id AND k.anonymous_actor_id = x.actor_id
              WHERE x.tenant_id = $1 GROUP BY x.session_id, 1, 2, 3) s
      WHERE day < (now() AT TIME ZONE 'UTC')::date AND day NOT IN (SELECT day FROM rm_session_days_stale WHERE tenant_id = $1)
      GROUP BY 1, 2`,
  ],
];

async function assertMatchesRaw(tenantId: string, when: string): Promise<void> {
  for (const [name, derived, raw] of CHECKS) {
    assert.deepEqual(norm(await t.db.query(derived, [tenantId])), norm(await t.db.query(raw, [tenantId])), `${name} (${when})`);
  }
}

describe('read model', () => {
  it('equals a recomputation from raw rows after retries, duplicates, late events, identify links, sessions and a crash mid-fold; before and after compaction', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    const S1 = '0190a0b0-0000-7000-8000-000000000001';
    const S2 = '0190a0b0-0000-7000-8000-000000000002';
    const first = [
      event({ actor_id: 'anon-1', timestamp: at(-10 * DAY), name: 'open' }), // late: 10 days ago
      event({ actor_id: 'anon-1', timestamp: at(0), account_id: 'acme', license_id: 'L1', session_id: S1 }),
      event({ actor_id: 'u2', timestamp: at(60_000), account_id: 'acme', license_id: 'L2', name: 'save', product_version: '2.0.0' }),
      event({ actor_id: 'u3', timestamp: at(-DAY), account_id: 'globex' }),
      // Earlier the same day on the greater version: the day's last version is 1.0.0.
      event({ actor_id: 'u3', timestamp: at(-DAY - 60_000), account_id: 'globex', product_version: '2.0.0' }),
    ];
    assert.equal((await postEvents(t.app, tn.ingestKey, first)).statusCode, 200);
    // The session starts with no account; its events carry one (S1 above, acme/L1).
    assert.equal(
      (
        await post(t.app, tn.ingestKey, '/v1/events/sessions', {
          session_id: S1,
          actor_id: 'anon-1',
          product: 'app',
          product_version: '1.0.0',
          started_at: at(-60_000),
        })
      ).statusCode,
      200,
    );
    // A session of anon-1 three days ago: its day's release-health sets are built, then moved by the link below.
    const S3 = '0190a0b0-0000-7000-8000-000000000003';
    const s3 = { session_id: S3, actor_id: 'anon-1', product: 'app', product_version: '1.0.0', started_at: at(-3 * DAY) };
    assert.equal((await post(t.app, tn.ingestKey, '/v1/events/sessions', s3)).statusCode, 200);
    await runJob();
    assert.equal((await postEvents(t.app, tn.ingestKey, first)).statusCode, 200, 'a client retry of the whole batch: duplicates');
    await crashMidFold();
    // identify after anon-1 was folded: its rows move to user-1, including the late day.
    await identify(tn.ingestKey, 'anon-1', 'user-1', at(120_000));
    assert.equal(
      (
        await postEvents(t.app, tn.ingestKey, [
          event({ actor_id: 'user-1', timestamp: at(180_000), account_id: 'acme', license_id: 'L1' }),
          // The anonymous id again, after its link: resolved to user-1 when folded.
          event({ actor_id: 'anon-1', timestamp: at(-9 * DAY), name: 'late', account_id: 'acme' }),
        ])
      ).statusCode,
      200,
    );
    assert.equal(
      (
        await post(t.app, tn.ingestKey, '/v1/events/sessions', {
          session_id: S2,
          actor_id: 'u2',
          product: 'app',
          product_version: '2.0.0',
          started_at: at(0),
          account_id: 'acme',
        })
      ).statusCode,
      200,
    );
    const exception = (id: string, severity: string, session: string) => ({
      exception_id: id,
      exception_type: 'TypeError',
      message: 'boom',
      stack_trace: 'TypeError: boom\n    at a (x.js:1:1)',
      severity,
      occurred_at: at(240_000),
      actor_id: 'u2',
      product: 'app',
      product_version: '2.0.0',
      account_id: 'acme',
      session_id: session,
    });
    assert.equal((await post(t.app, tn.ingestKey, '/v1/events/exceptions', exception('x1', 'non_fatal', S2))).statusCode, 200);
    await crashMidFold();
    await runJob(0, 1); // slices one transaction id wide
    // A later day for an account and version whose first day is folded already (acme on 1.0.0: 9 days ago): it stays.
    const later = event({ actor_id: 'u2', timestamp: at(360_000), account_id: 'acme', license_id: 'L2' });
    assert.equal((await postEvents(t.app, tn.ingestKey, [later])).statusCode, 200);
    assert.equal((await post(t.app, tn.ingestKey, '/v1/events/exceptions', exception('x2', 'fatal', S1))).statusCode, 200);
    assert.equal((await post(t.app, tn.ingestKey, '/v1/events/sessions/end', { session_id: S2, ended_at: at(300_000), end_reason: 'normal' })).statusCode, 200);
    await runJob();
    await runJob(); // nothing new: nothing counted twice
    await assertMatchesRaw(tn.id, 'deltas');

    // By hand: today user-1 (anon-1's events and its own) and u2 are active; 10 days ago only user-1 (then anon-1).
    // S1 started without an account and took acme from its events; x2 (fatal) crashed it; x1 made S2 errored.
    const dau = async (ms: number) =>
      (
        await t.db.query<{ actor_id: string }>(
          'SELECT DISTINCT actor_id FROM rm_actor_days WHERE tenant_id = $1 AND day = $2::date AND events > 0 ORDER BY 1',
          [tn.id, dayOf(ms)],
        )
      ).map((r) => r.actor_id);
    assert.deepEqual(await dau(0), ['u2', 'user-1']);
    assert.deepEqual(await dau(-10 * DAY), ['user-1']);
    const sessions = await t.db.query<{ session_id: string; status: string; account_id: string | null; actor_id: string }>(
      'SELECT session_id, status, account_id, actor_id FROM rm_sessions WHERE tenant_id = $1 ORDER BY 1',
      [tn.id],
    );
    assert.deepEqual(
      sessions.map((s) => [s.session_id, s.status, s.account_id, s.actor_id]),
      [
        [S1, 'crashed', 'acme', 'user-1'],
        [S2, 'errored', 'acme', 'u2'],
        [S3, 'open', null, 'user-1'],
      ],
    );

    // Compaction changes no answer.
    for (const d of await t.db.query<{ day: string }>('SELECT day::text AS day FROM rm_compaction_due WHERE tenant_id = $1', [tn.id])) {
      await t.db.tryWithLock(LOCKS.rollups, (s) => s.script(compactDay(tn.id, d.day)));
    }
    await mergeAll(2); // earlier tests' keys too
    assert.equal(await mergeStep(2), 0, 'nothing left to merge');
    await assertMatchesRaw(tn.id, 'compacted');
    const months = await monthRows(tn.id);
    assert.equal(months.rows, months.keys, 'one row per (month, actor, product, account, license) once compacted');
    assert.equal(months.unmerged, 0);
    const [{ n }] = (await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM rm_actor_days WHERE tenant_id = $1 AND actor_id = 'user-1' AND day = $2::date",
      [tn.id, dayOf(0)],
    )) as [{ n: number }];
    assert.equal(n, 1, 'one row per active actor per day once compacted');
  });
});

describe('compaction', () => {
  it('compacts a day over that two folds wrote, to one row per key, and leaves one that one fold wrote as it is; the answers stay those of raw rows', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    await runJob(); // what earlier tests left, folded and compacted first
    // Three actors in three accounts (sent in reverse order), on two days over: day A in one batch, day B in two.
    const batch = (ms: number) =>
      ['zeta', 'mu', 'alpha'].map((account, j) =>
        event({ actor_id: `c${j}`, timestamp: at(ms + j * 60_000), account_id: account, license_id: `L-${account}` }),
      );
    // Each day's events at its noon (UTC), so that no offset below reaches another day, whatever the time of the run.
    const noon = (daysAgo: number) => Math.floor(base / DAY) * DAY - daysAgo * DAY + 12 * HOUR - base;
    const [dayA, dayB] = [noon(5), noon(6)];
    assert.equal((await postEvents(t.app, tn.ingestKey, batch(dayA))).statusCode, 200);
    // And c9 on day B at one instant in both folds, on two versions: its last version is the greater in C order ('2.0.0'), as one fold of both picks.
    const tie = (version: string) => event({ actor_id: 'c9', timestamp: at(dayB + 3_600_000), account_id: 'mu', license_id: 'L-mu', product_version: version });
    assert.equal((await postEvents(t.app, tn.ingestKey, [...batch(dayB), tie('2.0.0')])).statusCode, 200);
    await foldOnly();
    assert.equal((await postEvents(t.app, tn.ingestKey, [...batch(dayB + 10_000), tie('10.0.0')])).statusCode, 200);
    await foldOnly();
    const due = () =>
      t.db.query<{ day: string; folds: number }>('SELECT day::text AS day, folds FROM rm_compaction_due WHERE tenant_id = $1 ORDER BY day', [tn.id]);
    assert.deepEqual(await due(), [
      { day: dayOf(dayB), folds: 2 },
      { day: dayOf(dayA), folds: 1 },
    ]);
    // Where each row of a day is stored: a compaction deletes and rewrites them.
    const places = (day: number) =>
      t.db.query<{ tbl: string; ctid: string }>(
        `SELECT 'rm_actor_days' AS tbl, ctid::text FROM rm_actor_days WHERE tenant_id = $1 AND day = $2::date
         UNION ALL SELECT 'rm_usage_days', ctid::text FROM rm_usage_days WHERE tenant_id = $1 AND day = $2::date
         UNION ALL SELECT 'rm_feature_days', ctid::text FROM rm_feature_days WHERE tenant_id = $1 AND day = $2::date ORDER BY 1, 2`,
        [tn.id, dayOf(day)],
      );
    const rowsOfA = await places(dayA);
    assert.equal(rowsOfA.length, 9, 'a row per actor, per account and license, and per feature of each');
    const actorDays = async (day: number) =>
      (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM rm_actor_days WHERE tenant_id = $1 AND day = $2::date', [tn.id, dayOf(day)]))[0]!.n;
    assert.equal(await actorDays(dayB), 8, 'a delta per actor and fold');

    await runJob();
    assert.deepEqual(await due(), [], 'nothing left due');
    assert.deepEqual(await places(dayA), rowsOfA, 'the day one fold wrote was not rewritten');
    assert.equal(await actorDays(dayB), 4, 'one row per actor once compacted');
    const [c9] = await t.db.query<{ version: string }>(`SELECT version FROM rm_actor_days WHERE tenant_id = $1 AND actor_id = 'c9'`, [tn.id]);
    assert.equal(c9?.version, '2.0.0');
    await assertMatchesRaw(tn.id, 'after compaction');
  });
});

describe("an exceptions-only actor day's version", () => {
  it("is the latest exception's, and at a tie of instants the greater in C order, as for events", async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    // Two exceptions of one actor at one instant, no event that day: the C-greater version ('2.0.0', not '10.0.0') sent last.
    const exception = (id: string, version: string) => ({
      exception_id: id,
      exception_type: 'TypeError',
      message: 'boom',
      severity: 'non_fatal',
      occurred_at: at(-3 * DAY),
      actor_id: 'xv',
      product: 'app',
      product_version: version,
    });
    for (const [id, version] of [
      ['xv1', '10.0.0'],
      ['xv2', '2.0.0'],
    ]) {
      assert.equal((await post(t.app, tn.ingestKey, '/v1/events/exceptions', exception(id!, version!))).statusCode, 200);
    }
    await foldOnly();
    const rows = await t.db.query<{ version: string; events: number }>(
      `SELECT version, events::int AS events FROM rm_actor_days WHERE tenant_id = $1 AND actor_id = 'xv'`,
      [tn.id],
    );
    assert.deepEqual(rows, [{ version: '2.0.0', events: 0 }]);
  });
});

describe("rm_actor_months' merge", () => {
  it('merges in steps of a bounded number of keys, to one row per key with the answers of a recomputation; a step that dies changes nothing and a later run finishes', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    await runJob(); // what earlier tests left, folded and merged first
    // 8 actors, 2 accounts, this month and one 40 days back: each batch folded alone, so a key gathers a delta per batch.
    const batch = (n: number, ms: number) =>
      Array.from({ length: n }, (_, j) => event({ actor_id: `m${j}`, timestamp: at(ms + j * 60_000), account_id: j % 2 ? 'acme' : 'globex' }));
    assert.equal((await postEvents(t.app, tn.ingestKey, [...batch(6, 0), ...batch(3, -40 * DAY)])).statusCode, 200);
    await foldOnly();
    // Keys that had no row go in merged: nothing to merge, no second write of them.
    assert.deepEqual(await monthRows(tn.id), { rows: 9, keys: 9, unmerged: 0, due: 0 });
    assert.equal(await mergeStep(4), 0, 'new keys need no merge');
    // The back month's second batch: the same UTC hours on another day of that month (bits of the same columns to OR).
    const back = dayOf(-40 * DAY).endsWith('-01') ? -39 * DAY : -41 * DAY;
    assert.equal((await postEvents(t.app, tn.ingestKey, [...batch(8, HOUR), ...batch(2, back)])).statusCode, 200);
    await foldOnly();
    assert.equal((await postEvents(t.app, tn.ingestKey, [...batch(8, -HOUR), event({ actor_id: 'm9', timestamp: at(0) })])).statusCode, 200);
    await foldOnly();
    // identify: m7's rows (deltas, in both months) move to m1's keys of the same account.
    await identify(tn.ingestKey, 'm7', 'm1', at(0));
    await foldOnly();
    const due = await monthRows(tn.id);
    assert.ok(due.due > 8 && due.rows > due.keys + 8, JSON.stringify(due));
    await assertMatchesRaw(tn.id, 'deltas to merge');

    // A step that merges part of them: its keys hold one merged row; the rest still wait; the same answers.
    assert.equal(await mergeStep(4), 4);
    const part = await monthRows(tn.id);
    assert.ok(part.due === due.due - 4 && part.rows < due.rows && part.due > 4, JSON.stringify(part));
    await assertMatchesRaw(tn.id, 'merged in part');

    // A step that dies once its merge ran: nothing of it stays.
    await assert.rejects(
      t.db.tryWithLock(LOCKS.rollups, (s) => s.script([...mergeMonthsStep(4), { sql: 'SELECT 1 / 0 AS crash' }], { derived: true })),
      /division by zero/,
    );
    assert.deepEqual(await monthRows(tn.id), part, 'the crashed step left every row');
    await assertMatchesRaw(tn.id, 'after a crashed merge step');

    // The job finishes the merge, 4 keys a step at most: one merged row per key, the same answers.
    const steps: { step: string; keys: number; limit: number }[] = [];
    const log = { ...SILENT_LOG, warn: (o: { step: string; keys: number; limit: number }) => void (o.step === 'merge months' && steps.push(o)) } as never;
    await runJob(10_000, 256, log, 4);
    assert.ok(steps.length >= Math.ceil(part.due / 4) && steps.length > 1, `${steps.length} steps for ${part.due} keys`);
    assert.ok(
      steps.every((s) => s.limit <= 4 && s.keys <= s.limit),
      JSON.stringify(steps),
    );
    assert.equal(steps.at(-1)!.keys < 4, true, 'the last step found fewer keys than it could take: none left');
    const done = await monthRows(tn.id);
    assert.deepEqual(done, { rows: done.keys, keys: done.keys, unmerged: 0, due: 0 });
    await assertMatchesRaw(tn.id, 'merged');
    assert.equal(await mergeStep(4), 0, 'nothing left to merge');
  });
});

describe("rm_actor_months' rewrite", () => {
  it('rewrites the table (VACUUM FULL) past the bloat it is given, none by default on a small table; the answers stay those of a recomputation', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    const batch = Array.from({ length: 6 }, (_, j) => event({ actor_id: `w${j}`, timestamp: at(j * 60_000), account_id: 'acme' }));
    assert.equal((await postEvents(t.app, tn.ingestKey, batch)).statusCode, 200);
    const logged: string[] = [];
    const log = { ...SILENT_LOG, warn: (o: { step: string }) => logged.push(o.step) } as never;
    const run = (monthsBloat?: { ratio: number; minPages: number }) =>
      foldReadModel(t.db, { vacuumEveryMs: 0, slowStepMs: 0.001, ...(monthsBloat && { monthsBloat }) }, log);
    await run();
    assert.ok(logged.includes('vacuum rm_actor_months'), logged.join(', '));
    assert.ok(!logged.includes('vacuum full rm_actor_months'), 'a table of a few pages is not rewritten by default');
    assert.equal((await postEvents(t.app, tn.ingestKey, [event({ actor_id: 'w9', timestamp: at(HOUR), account_id: 'acme' })])).statusCode, 200);
    await run({ ratio: 0, minPages: 0 });
    assert.ok(logged.includes('vacuum full rm_actor_months'), logged.join(', '));
    await assertMatchesRaw(tn.id, 'rewritten');
  });
});

describe('the rollup job on a busy store', () => {
  it('logs each transaction that held the store longer than slowStepMs, with what it did; none by default', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ timestamp: at(0) })])).statusCode, 200);
    const logged: { step: string; ms: number }[] = [];
    const log = { ...SILENT_LOG, warn: (o: { step: string; ms: number }) => logged.push(o) } as never;
    const run = (slowStepMs?: number) => foldReadModel(t.db, { vacuumEveryMs: 0, ...(slowStepMs !== undefined && { slowStepMs }) }, log);
    await run();
    assert.equal(logged.length, 0);
    // Every transaction takes more than a microsecond: each is logged.
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ timestamp: at(1000) })])).statusCode, 200);
    await run(0.001);
    const kinds = new Set(logged.map((l) => l.step.split(' ')[0]));
    for (const kind of ['fold', 'refresh', 'touch', 'merge', 'vacuum']) assert.ok(kinds.has(kind), `${kind} in ${[...kinds].join(', ')}`);
    assert.ok(logged.every((l) => typeof l.ms === 'number' && l.ms >= 0));
  });

  /** Five 10-event batches of a new tenant, folded by one run of the job with `options`: the events of each slice that folded any, once all 50 are folded. */
  async function slicesOf(options: RollupOptions): Promise<number[]> {
    const tenant = await tenantWithProduct(t.app, 'business');
    await runJob(); // what earlier tests left, folded first
    for (let i = 0; i < 5; i++) {
      const batch = Array.from({ length: 10 }, (_, j) => event({ actor_id: `b${j}`, timestamp: at(i * 1000 + j) }));
      assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    }
    const folds: { events: number }[] = [];
    const log = { ...SILENT_LOG, warn: (o: { step: string; events: number }) => void (o.step === 'fold' && folds.push(o)) } as never;
    await foldReadModel(t.db, { ...options, initialWidth: 256, vacuumEveryMs: 0, slowStepMs: 0.001 }, log);
    const [{ n }] = (await t.db.query<{ n: number }>('SELECT sum(events)::int AS n FROM rm_event_hours WHERE tenant_id = $1', [tenant.id])) as [{ n: number }];
    assert.equal(n, 50);
    return folds.filter((f) => f.events > 0).map((f) => f.events);
  }

  it('bounds a slice by events, not transaction ids: a wide slice holds one batch when its budget is smaller than a batch, and every event is folded once', async () => {
    // 256 ids wide, but a budget of 3 events (0.3 ms at the first cost per event): each 10-event batch is a slice of its own.
    assert.deepEqual(await slicesOf({ sliceMs: 0.3 }), [10, 10, 10, 10, 10]);
  });

  it("takes up to minSliceEvents events in a slice whatever its time (PostgreSQL's floor), and every event is folded once", async () => {
    // The same 0.3 ms aim, with a floor of 40 events: the first four batches, then the fifth.
    assert.deepEqual(await slicesOf({ sliceMs: 0.3, minSliceEvents: 40 }), [40, 10]);
  });
});

describe("a fold step's BRIN summary", () => {
  it('summarises at most `ranges` ranges per index, walking past ranges summarised before: after a restart (a new cursor) it goes on where the work is', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    const [{ product }] = (await t.db.query<{ product: string }>('SELECT id::text AS product FROM products WHERE tenant_id = $1', [tn.id])) as [
      { product: string },
    ];
    // About 12 MB of events, so the heap holds at least 9 ranges of 128 pages (1 MB) each.
    await t.db.query(
      `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, properties)
       SELECT $1, gen_random_uuid(), $2, '1.0.0', 'ui', 'click', now(), now(), 'brin-' || g, jsonb_build_object('pad', repeat('x', 300))
         FROM generate_series(1, 30000) g`,
      [tn.id, product],
    );
    try {
      const ranges = 3;
      const [{ pages }] = (await t.db.query<{ pages: number }>("SELECT (pg_relation_size('events') / current_setting('block_size')::int)::int AS pages")) as [
        { pages: number },
      ];
      assert.ok(pages >= 9 * 128, `events has ${pages} pages`);
      // The first 9 ranges not summarised, whatever vacuum did before.
      for (let r = 0; r < 9; r++) await t.db.query("SELECT brin_desummarize_range('events_ingest_xid', $1)", [r * 128]);
      const step = async (cursor: Map<string, number>, foldAfter?: number) => {
        const input = { cursor, ranges, width: 1, until: undefined, budget: 1, foldAfter };
        const res = await t.db.tryWithLock(LOCKS.rollups, (s) => s.script(foldStep(input), { derived: true }));
        return { ...foldStepDone(input, res!.rows), at: cursor.get('events_ingest_xid')! };
      };
      // A first step from the table's start: the first 3 ranges, summarised; no fold (more are left).
      const first = await step(new Map());
      assert.deepEqual([first.folded, first.at], [false, 3 * 128]);
      // A restart: a new cursor at 0. The 3 summarised ranges are walked past, the next 3 summarised (the old step
      // stopped after 3 ranges whatever it did, and summarised none here).
      const second = await step(new Map());
      assert.equal(second.folded, false);
      assert.ok(second.at >= 6 * 128, `the second step's cursor is at page ${second.at}`);
      const [{ summarised }] = (await t.db.query<{ summarised: number }>(
        `SELECT count(*) FILTER (WHERE brin_summarize_range('events_ingest_xid', b) = 0)::int AS summarised FROM generate_series(0, 5 * 128, 128) b`,
      )) as [{ summarised: number }];
      assert.equal(summarised, 6, 'ranges 0 to 5 were summarised by the two steps');

      // Every range not summarised, then steps from one cursor, as the job makes them: a step that reached the tables' ends
      // but summarised more than `foldAfter` ranges leaves the fold to the next one, which folds whatever it summarised.
      const all = Math.ceil(pages / 128);
      for (let r = 0; r < all; r++) await t.db.query("SELECT brin_desummarize_range('events_ingest_xid', $1)", [r * 128]);
      const cursor = new Map<string, number>();
      let heldBack = false;
      const steps: { summarised: number; folded: boolean; heldBack: boolean }[] = [];
      while (!steps.at(-1)?.folded && steps.length < all + 5) {
        const s = await step(cursor, heldBack ? undefined : 1);
        steps.push(s);
        heldBack = s.heldBack;
      }
      const last = steps.at(-1)!;
      assert.equal(last.folded, true, JSON.stringify(steps));
      assert.ok(steps.slice(0, -1).every((s) => !s.folded && s.summarised > 0));
      // Every range was summarised by a step that did not fold but perhaps the last, which summarised at most one or came
      // after a step held back.
      assert.ok(last.summarised <= 1 || steps.at(-2)?.heldBack, JSON.stringify(steps));
      assert.ok(
        steps.some((s) => s.heldBack),
        JSON.stringify(steps),
      );
    } finally {
      await t.db.query('DELETE FROM events WHERE tenant_id = $1', [tn.id]);
    }
  });
});
