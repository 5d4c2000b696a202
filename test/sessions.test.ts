// Sessions over app.inject against a real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); only clocks are set by hand (the timeout job's, and one app's).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { v7 as uuidv7 } from 'uuid';
import { sessionTimeoutJob } from '../src/jobs/session-timeouts.js';
import { event, get, post, postEvents, runJob, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const HOUR = 3_600_000;
// Open sessions start an hour ago, not on a fixed date: a server sharing the database runs the
// timeout job on the real clock, and must not end them mid-test. Timeout tests use 2001 instead.
const STARTED = new Date(Math.floor(Date.now() / 1000) * 1000 - HOUR).toISOString();
const at = (offsetMs: number) => new Date(Date.parse(STARTED) + offsetMs).toISOString();
const ENDED = at(HOUR);

const start = (key: string | undefined, body: unknown, app = t.app) => post(app, key, '/v1/events/sessions', body);
const end = (key: string | undefined, body: unknown, app = t.app) => post(app, key, '/v1/events/sessions/end', body);

function sessionStart(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { session_id: uuidv7(), actor_id: 'actor-1', product: 'app', product_version: '1.0.0', started_at: STARTED, ...overrides };
}

interface SessionRow {
  actor_id: string;
  product_version: string;
  account_id: string | null;
  license_id: string | null;
  properties: unknown;
  started_at: string;
  last_seen_at: string;
  ended_at: string | null;
  end_reason: string | null;
}

async function sessionRow(tenantId: string, sessionId: string): Promise<SessionRow | undefined> {
  const rows = await t.db.query<Record<string, unknown>>(
    `SELECT actor_id, product_version, account_id, license_id, properties, started_at, last_seen_at, ended_at, end_reason
       FROM sessions WHERE tenant_id = $1 AND session_id = $2`,
    [tenantId, sessionId],
  );
  const r = rows[0];
  if (!r) return undefined;
  const iso = (v: unknown) => (v === null ? null : new Date(v as Date).toISOString());
  return {
    ...(r as unknown as SessionRow),
    started_at: iso(r.started_at)!,
    last_seen_at: iso(r.last_seen_at)!,
    ended_at: iso(r.ended_at),
    end_reason: (r.end_reason as string | null) ?? null,
  };
}

async function sessionCount(tenantId: string): Promise<number> {
  const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE tenant_id = $1', [tenantId]);
  return row!.n;
}

/**
 * Runs the session-timeouts job once with its clock at `now`. The job spans every tenant, so the
 * timeout tests use old instants (2001) that no other open session in a shared database is behind.
 */
async function runTimeouts(now: Date): Promise<void> {
  await runJob(t.db, sessionTimeoutJob(t.config.sessionTimeoutMinutes), { now: () => now });
}
const timeoutMs = () => t.config.sessionTimeoutMinutes * 60_000;
const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms);

async function strictOn(adminKey: string): Promise<void> {
  const res = await t.app.inject({
    method: 'PATCH',
    url: '/v1/products/app',
    headers: { authorization: `Bearer ${adminKey}` },
    payload: { strict_versions_enabled: true },
  });
  assert.equal(res.statusCode, 200, res.body);
}

async function deadLetters(adminKey: string, kind: string): Promise<{ reason: string; kind: string; payload: unknown }[]> {
  const res = await get(t.app, adminKey, `/v1/invalid-events?kind=${kind}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data;
}

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json(): { code: string; status: number } },
  status: number,
  code: string,
): void {
  assert.equal(res.statusCode, status);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  assert.equal(res.json().code, code);
  assert.equal(res.json().status, status);
}

describe('Session state table (SPEC.md "Session")', () => {
  it('(none) → active: a valid start answers 200 {session_id, status: accepted} and stores the session open', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart({ account_id: 'acme', license_id: 'LIC-1', properties: { plan: 'gold', seats: 3, beta: false } });
    const res = await start(tenant.ingestKey, s);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'accepted' });
    assert.deepEqual(await sessionRow(tenant.id, s.session_id as string), {
      actor_id: 'actor-1',
      product_version: '1.0.0',
      account_id: 'acme',
      license_id: 'LIC-1',
      properties: { plan: 'gold', seats: 3, beta: false },
      started_at: STARTED,
      last_seen_at: STARTED,
      ended_at: null,
      end_reason: null,
    });
  });

  it('active → ended: end_reason normal answers 200 {session_id, status: ended}', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: 'normal' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'ended' });
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.ended_at, ENDED);
    assert.equal(row!.end_reason, 'normal');
  });

  it('active → ended: an end without end_reason is a normal end', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED });
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'ended' });
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.end_reason, 'normal');
  });

  it('active → ended: end_reason sdk_recovery answers 200 {session_id, status: ended}', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: 'sdk_recovery' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'ended' });
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.ended_at, ENDED);
    assert.equal(row!.end_reason, 'sdk_recovery');
  });

  it('active → ended by the server: no sign of life for SESSION_TIMEOUT ends it with end_reason timeout and ended_at = its start', async () => {
    const tenant = await tenantWithProduct(t.app);
    const startedAt = '2001-02-01T10:00:00.000Z';
    const s = sessionStart({ started_at: startedAt });
    await start(tenant.ingestKey, s);
    await runTimeouts(plus(startedAt, timeoutMs() - 60_000));
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.ended_at, null, 'not yet: a minute short of the timeout');
    await runTimeouts(plus(startedAt, timeoutMs() + 60_000));
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.end_reason, 'timeout');
    assert.equal(row!.ended_at, startedAt);
  });
});

describe('POST /v1/events/sessions/end (CONTRACT.md "Sessions and exceptions")', () => {
  it('a second end answers 200 {status: already_ended} and the first end is kept', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: 'normal' });
    const again = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: at(2 * HOUR), end_reason: 'sdk_recovery' });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().status, 'already_ended');
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.ended_at, ENDED);
    assert.equal(row!.end_reason, 'normal');
  });

  it('an end of an unknown session answers 404 session_not_found', async () => {
    const tenant = await tenantWithProduct(t.app);
    const res = await end(tenant.ingestKey, { session_id: uuidv7(), ended_at: ENDED });
    assertProblem(res, 404, 'session_not_found');
    assert.equal(await sessionCount(tenant.id), 0);
  });

  it('an end that arrives before its start: 404, then the start within the hour creates the session already ended, and a later end answers already_ended', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    const early = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: 'normal' });
    assertProblem(early, 404, 'session_not_found');
    const started = await start(tenant.ingestKey, s);
    assert.equal(started.statusCode, 200, started.body);
    assert.deepEqual(started.json(), { session_id: s.session_id, status: 'accepted' });
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.started_at, STARTED);
    assert.equal(row!.ended_at, ENDED);
    assert.equal(row!.end_reason, 'normal');
    const later = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: at(3 * HOUR) });
    assert.equal(later.statusCode, 200, later.body);
    assert.deepEqual(later.json(), { session_id: s.session_id, status: 'already_ended' });
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.ended_at, ENDED);
  });

  it('an early end stamped before the start that then arrives: the session is created ended at its start', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    assertProblem(await end(tenant.ingestKey, { session_id: s.session_id, ended_at: at(-60_000), end_reason: 'sdk_recovery' }), 404, 'session_not_found');
    assert.equal((await start(tenant.ingestKey, s)).statusCode, 200);
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.deepEqual([row!.started_at, row!.ended_at, row!.end_reason], [STARTED, STARTED, 'sdk_recovery']);
    const later = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: at(HOUR) });
    assert.deepEqual(later.json(), { session_id: s.session_id, status: 'already_ended' });
  });

  it('an early end is kept for an hour only: a start more than an hour later creates an open session', async () => {
    let clock = new Date('2026-03-01T12:00:00.000Z');
    const clocked = await startTestApp({ db: t.db, now: () => clock });
    try {
      const tenant = await tenantWithProduct(clocked.app);
      const s = sessionStart();
      assertProblem(await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED }, clocked.app), 404, 'session_not_found');
      clock = new Date(clock.getTime() + HOUR + 60_000);
      assert.equal((await start(tenant.ingestKey, s, clocked.app)).statusCode, 200);
      const row = await sessionRow(tenant.id, s.session_id as string);
      assert.equal(row!.ended_at, null);
      assert.equal(row!.end_reason, null);
    } finally {
      await clocked.close();
    }
  });

  it("an ended_at earlier than the session's started_at answers 422 and leaves the session open", async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: at(-1000) });
    assert.equal(res.statusCode, 422, res.body);
    assert.ok(res.json().errors.some((e: { field: string }) => e.field === 'ended_at'));
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.ended_at, null);
  });

  it('BAD-INPUTS 22: a session end with end_reason timeout answers 422 reserved_end_reason and leaves the session open', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: 'timeout' });
    assertProblem(res, 422, 'reserved_end_reason');
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.ended_at, null);
    assert.equal(row!.end_reason, null);
  });

  it('any other end_reason answers 422 and leaves the session open', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    for (const endReason of ['crash', 'NORMAL', '', 42, ['normal']]) {
      const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: endReason });
      assert.equal(res.statusCode, 422, `end_reason ${JSON.stringify(endReason)}: ${res.body}`);
      assert.notEqual(res.json().code, 'reserved_end_reason');
    }
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.ended_at, null);
  });

  it('end_reason null is read as absent: the session ends normal (clients that serialise nulls are not punished)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: null });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.end_reason, 'normal');
  });

  it('sdk_recovery with the start context for an unknown session creates it and ends it in one step', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const res = await end(tenant.ingestKey, {
      session_id: sessionId,
      ended_at: ENDED,
      end_reason: 'sdk_recovery',
      actor_id: 'actor-9',
      product: 'app',
      product_version: '2.1.0',
      started_at: STARTED,
      account_id: 'acme',
      license_id: 'LIC-9',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: sessionId, status: 'ended' });
    const row = await sessionRow(tenant.id, sessionId);
    assert.equal(row!.actor_id, 'actor-9');
    assert.equal(row!.product_version, '2.1.0');
    assert.equal(row!.started_at, STARTED);
    assert.equal(row!.account_id, 'acme');
    assert.equal(row!.license_id, 'LIC-9');
    assert.equal(row!.ended_at, ENDED);
    assert.equal(row!.end_reason, 'sdk_recovery');
    const again = await end(tenant.ingestKey, { session_id: sessionId, ended_at: at(2 * HOUR), end_reason: 'sdk_recovery' });
    assert.equal(again.json().status, 'already_ended');
  });

  it('sdk_recovery ends a known session whatever its start context says; the same context for an unknown session is a 422', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(tenant.ingestKey, s);
    const context = { end_reason: 'sdk_recovery', actor_id: 'actor-9', product: 'app', product_version: '2.1.0', started_at: 'yesterday' };
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, ...context });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'ended' });
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.end_reason, 'sdk_recovery');
    const unknown = uuidv7();
    const refused = await end(tenant.ingestKey, { session_id: unknown, ended_at: ENDED, ...context });
    assertProblem(refused, 422, 'validation_error');
    assert.equal(refused.json().errors[0].field, 'started_at');
    assert.equal(await sessionRow(tenant.id, unknown), undefined);
  });

  it('sdk_recovery without the start context for an unknown session answers 404 and creates nothing', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    assertProblem(await end(tenant.ingestKey, { session_id: sessionId, ended_at: ENDED, end_reason: 'sdk_recovery' }), 404, 'session_not_found');
    assert.equal(await sessionRow(tenant.id, sessionId), undefined);
  });

  it("a client end of a session the server already timed out keeps the server's end", async () => {
    const tenant = await tenantWithProduct(t.app);
    const startedAt = '2001-02-02T10:00:00.000Z';
    const s = sessionStart({ started_at: startedAt });
    await start(tenant.ingestKey, s);
    await runTimeouts(plus(startedAt, timeoutMs() + 60_000));
    const res = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: plus(startedAt, 30 * HOUR).toISOString(), end_reason: 'sdk_recovery' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'already_ended' });
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.end_reason, 'timeout');
    assert.equal(row!.ended_at, startedAt);
  });
});

describe('what a session keeps', () => {
  it('account_id and license_id are captured at start; a later event or end with other ids does not change the session', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart({ account_id: 'acme', license_id: 'LIC-1' });
    await start(tenant.ingestKey, s);
    const res = await postEvents(t.app, tenant.ingestKey, [
      event({ session_id: s.session_id, timestamp: at(10 * 60_000), account_id: 'globex', license_id: 'LIC-2' }),
    ]);
    assert.equal(res.statusCode, 200, res.body);
    const ended = await end(tenant.ingestKey, { session_id: s.session_id, ended_at: ENDED, account_id: 'initech', license_id: 'LIC-3' });
    assert.equal(ended.statusCode, 200, ended.body);
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.account_id, 'acme');
    assert.equal(row!.license_id, 'LIC-1');
    assert.equal(row!.ended_at, ENDED);
  });

  it('a repeated start changes nothing (the first start is kept)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart({ account_id: 'acme' });
    await start(tenant.ingestKey, s);
    const again = await start(tenant.ingestKey, { ...s, account_id: 'globex', started_at: at(30 * 60_000) });
    assert.equal(again.statusCode, 200, again.body);
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.account_id, 'acme');
    assert.equal(row!.started_at, STARTED);
  });

  it("events carrying the session_id move its last sign of life forward: the timeout ends it at the latest event's timestamp", async () => {
    const tenant = await tenantWithProduct(t.app);
    const startedAt = '2001-02-03T10:00:00.000Z';
    const s = sessionStart({ started_at: startedAt });
    await start(tenant.ingestKey, s);
    const latest = plus(startedAt, 3 * HOUR).toISOString();
    // Out of order on purpose: the latest timestamp wins, not the latest arrival.
    const batch = [event({ session_id: s.session_id, timestamp: plus(startedAt, HOUR).toISOString() }), event({ session_id: s.session_id, timestamp: latest })];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    assert.equal(
      (await postEvents(t.app, tenant.ingestKey, [event({ session_id: s.session_id, timestamp: plus(startedAt, 2 * HOUR).toISOString() })])).statusCode,
      200,
    );
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.last_seen_at, latest);

    await runTimeouts(plus(latest, timeoutMs() - 60_000));
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.ended_at, null, 'alive: its latest event is not yet SESSION_TIMEOUT old');
    await runTimeouts(plus(latest, timeoutMs() + 60_000));
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.end_reason, 'timeout');
    assert.equal(row!.ended_at, latest);
  });

  it('a later batch moves the last sign of life forward again, and an older one after it does not move it back', async () => {
    const tenant = await tenantWithProduct(t.app);
    const startedAt = '2001-02-05T10:00:00.000Z';
    const s = sessionStart({ started_at: startedAt });
    await start(tenant.ingestKey, s);
    const at = (hours: number) => plus(startedAt, hours * HOUR).toISOString();
    for (const [hours, expected] of [
      [1, 1],
      [3, 3],
      [2, 3],
      [4, 4],
      [3, 4],
    ] as const) {
      assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ session_id: s.session_id, timestamp: at(hours) })])).statusCode, 200);
      assert.equal((await sessionRow(tenant.id, s.session_id as string))!.last_seen_at, at(expected), `after an event at +${hours} h`);
    }
  });

  it("an event that arrived before its session's start still counts as a sign of life once the start arrives", async () => {
    const tenant = await tenantWithProduct(t.app);
    const startedAt = '2001-02-04T10:00:00.000Z';
    const s = sessionStart({ started_at: startedAt });
    const latest = plus(startedAt, 2 * HOUR).toISOString();
    assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ session_id: s.session_id, timestamp: latest })])).statusCode, 200);
    assert.equal((await start(tenant.ingestKey, s)).statusCode, 200);
    await runTimeouts(plus(latest, timeoutMs() + 60_000));
    const row = await sessionRow(tenant.id, s.session_id as string);
    assert.equal(row!.end_reason, 'timeout');
    assert.equal(row!.ended_at, latest, 'ended_at = the latest event carrying its session_id (CONTRACT.md), not the start');
  });
});

describe('session validation', () => {
  it('strict mode on: a start with an unregistered version answers 422 UNREGISTERED_VERSION and creates no session', async () => {
    const tenant = await tenantWithProduct(t.app);
    const reg = await t.app.inject({
      method: 'POST',
      url: '/v1/version-registrations',
      headers: { authorization: `Bearer ${tenant.adminKey}` },
      payload: { product: 'app', product_version: '1.0.0' },
    });
    assert.equal(reg.statusCode, 201, reg.body);
    await strictOn(tenant.adminKey);
    const s = sessionStart({ product_version: '9.9.9' });
    const res = await start(tenant.ingestKey, s);
    assertProblem(res, 422, 'UNREGISTERED_VERSION');
    assert.equal(await sessionRow(tenant.id, s.session_id as string), undefined);
    assert.equal((await start(tenant.ingestKey, sessionStart({ product_version: '1.0.0' }))).statusCode, 200, 'a registered version still passes');
  });

  it('strict mode on: a recovery end whose start context carries an unregistered version answers 422 and creates no session', async () => {
    const tenant = await tenantWithProduct(t.app);
    await strictOn(tenant.adminKey);
    const sessionId = uuidv7();
    const res = await end(tenant.ingestKey, {
      session_id: sessionId,
      ended_at: ENDED,
      end_reason: 'sdk_recovery',
      actor_id: 'a',
      product: 'app',
      product_version: '9.9.9',
      started_at: STARTED,
    });
    assertProblem(res, 422, 'UNREGISTERED_VERSION');
    assert.equal(await sessionRow(tenant.id, sessionId), undefined);
  });

  it('reads the legacy source_app / source_version names on a start and on a recovery end', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { product: _p, product_version: _v, ...rest } = sessionStart();
    const res = await start(tenant.ingestKey, { ...rest, source_app: 'app', source_version: '0.9.1' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await sessionRow(tenant.id, rest.session_id as string))!.product_version, '0.9.1');
    const ended = await end(tenant.ingestKey, { session_id: rest.session_id, ended_at: ENDED, source_app: 'app', source_version: '0.9.1' });
    assert.deepEqual(ended.json(), { session_id: rest.session_id, status: 'ended' });

    const recovered = uuidv7();
    const rec = await end(tenant.ingestKey, {
      session_id: recovered,
      ended_at: ENDED,
      end_reason: 'sdk_recovery',
      actor_id: 'a',
      source_app: 'app',
      source_version: '0.9.2',
      started_at: STARTED,
    });
    assert.equal(rec.statusCode, 200, rec.body);
    assert.deepEqual(rec.json(), { session_id: recovered, status: 'ended' });
    assert.equal((await sessionRow(tenant.id, recovered))!.product_version, '0.9.2');
  });

  it('BAD-INPUTS 18: an invalid account_id or license_id on a session start answers 422 invalid_account_id / invalid_license_id', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const bad of ['', '   ', 'a'.repeat(257), 'acme\tcorp', 'acme\u0007']) {
      const a = sessionStart({ account_id: bad });
      assertProblem(await start(tenant.ingestKey, a), 422, 'invalid_account_id');
      const l = sessionStart({ license_id: bad });
      assertProblem(await start(tenant.ingestKey, l), 422, 'invalid_license_id');
    }
    assert.equal(await sessionCount(tenant.id), 0);
    assert.equal(
      (await start(tenant.ingestKey, sessionStart({ account_id: 'a'.repeat(256), license_id: '😀'.repeat(256) }))).statusCode,
      200,
      '256 chars pass',
    );
  });

  it("BAD-INPUTS 18: an invalid account_id in a recovery end's start context answers 422 invalid_account_id and creates nothing", async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const res = await end(tenant.ingestKey, {
      session_id: sessionId,
      ended_at: ENDED,
      end_reason: 'sdk_recovery',
      actor_id: 'a',
      product: 'app',
      product_version: '1.0.0',
      started_at: STARTED,
      account_id: '   ',
    });
    assertProblem(res, 422, 'invalid_account_id');
    assert.equal(await sessionRow(tenant.id, sessionId), undefined);
  });

  it('BAD-INPUTS 17: a reserved key in session properties answers 422 reserved_property_key', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const key of ['account_id', 'accountId', 'account', 'license_id', 'licenseId', 'license']) {
      const res = await start(tenant.ingestKey, sessionStart({ properties: { [key]: 'x' } }));
      assertProblem(res, 422, 'reserved_property_key');
      assert.match(res.json().detail, new RegExp(key));
    }
    assert.equal(await sessionCount(tenant.id), 0);
  });

  it('every 422 is kept as a dead letter with kind session or session_end', async () => {
    const tenant = await tenantWithProduct(t.app);
    const badStart = sessionStart({ properties: { license: 'x' } });
    assert.equal((await start(tenant.ingestKey, badStart)).statusCode, 422);
    const open = sessionStart();
    await start(tenant.ingestKey, open);
    const badEnd = { session_id: open.session_id, ended_at: ENDED, end_reason: 'timeout' };
    assert.equal((await end(tenant.ingestKey, badEnd)).statusCode, 422);

    const starts = await deadLetters(tenant.adminKey, 'session');
    assert.equal(starts.length, 1);
    assert.equal(starts[0]!.reason, 'reserved_property_key');
    assert.deepEqual(starts[0]!.payload, badStart);
    const ends = await deadLetters(tenant.adminKey, 'session_end');
    assert.equal(ends.length, 1);
    assert.equal(ends[0]!.reason, 'reserved_end_reason');
    assert.deepEqual(ends[0]!.payload, badEnd);
  });

  it('a start missing a required field answers 422 naming it, and is kept as a dead letter', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const field of ['session_id', 'actor_id', 'started_at', 'product', 'product_version']) {
      const s = sessionStart();
      delete s[field];
      const res = await start(tenant.ingestKey, s);
      assert.equal(res.statusCode, 422, `${field}: ${res.body}`);
      assert.ok(
        res.json().errors.some((e: { field: string }) => e.field === field),
        `${field}: ${res.body}`,
      );
    }
    assert.equal((await deadLetters(tenant.adminKey, 'session')).length, 5);
  });

  it('a start or an end without an API key answers 401', async () => {
    const tenant = await tenantWithProduct(t.app);
    const s = sessionStart();
    assertProblem(await start(undefined, s), 401, 'unauthorized');
    assertProblem(await start('tk_live_not-a-real-key', s), 401, 'unauthorized');
    assert.equal(await sessionCount(tenant.id), 0);
    await start(tenant.ingestKey, s);
    assertProblem(await end(undefined, { session_id: s.session_id, ended_at: ENDED }), 401, 'unauthorized');
    assert.equal((await sessionRow(tenant.id, s.session_id as string))!.ended_at, null);
  });
});

describe('tenancy', () => {
  it("tenant B ending tenant A's session gets 404 session_not_found, and A's session is unchanged", async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    const s = sessionStart();
    await start(a.ingestKey, s);
    assertProblem(await end(b.ingestKey, { session_id: s.session_id, ended_at: ENDED }), 404, 'session_not_found');
    assertProblem(await end(b.ingestKey, { session_id: s.session_id, ended_at: ENDED, end_reason: 'sdk_recovery' }), 404, 'session_not_found');
    const row = await sessionRow(a.id, s.session_id as string);
    assert.equal(row!.ended_at, null);
    assert.equal(row!.end_reason, null);
    assert.equal(await sessionCount(b.id), 0);
    assert.deepEqual((await end(a.ingestKey, { session_id: s.session_id, ended_at: ENDED })).json(), { session_id: s.session_id, status: 'ended' });
  });

  it('the same session_id in two tenants makes two independent sessions', async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    const s = sessionStart();
    assert.equal((await start(a.ingestKey, s)).statusCode, 200);
    assert.equal((await start(b.ingestKey, { ...s, actor_id: 'someone-else' })).statusCode, 200);
    await end(b.ingestKey, { session_id: s.session_id, ended_at: ENDED });
    assert.equal((await sessionRow(a.id, s.session_id as string))!.actor_id, 'actor-1');
    assert.equal((await sessionRow(a.id, s.session_id as string))!.ended_at, null);
    assert.equal((await sessionRow(b.id, s.session_id as string))!.ended_at, ENDED);
  });
});
