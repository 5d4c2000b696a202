// BAD-INPUTS.md 7, 10, 11 and 13 on the single-record ingestion routes (session start and end, exceptions, identify) over app.inject, hostile bodies written as raw JSON text; real app, real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { createProduct, createTenant, startTestApp, tenantWithProduct, type Tenant, type TestApp } from './helpers/app.js';
import { withRaw } from './helpers/verdicts.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

type Kind = 'session' | 'session_end' | 'exception' | 'identify';
const URLS: Record<Kind, string> = {
  session: '/v1/events/sessions',
  session_end: '/v1/events/sessions/end',
  exception: '/v1/events/exceptions',
  identify: '/v1/actors/identify',
};

// Sessions start an hour ago: a server sharing the database runs the timeout job on the real clock.
const HOUR = 3_600_000;
const STARTED = new Date(Math.floor(Date.now() / 1000) * 1000 - HOUR).toISOString();
const ENDED = new Date(Date.parse(STARTED) + HOUR / 2).toISOString();
const TRACE = `TypeError: Cannot read properties of undefined (reading 'sku')
    at priceLine (file:///srv/shop/dist/cart/pricing.js:42:31)
    at computeTotals (file:///srv/shop/dist/cart/pricing.js:18:22)`;

const sessionStart = (o: Record<string, unknown> = {}) => ({
  session_id: uuidv7(),
  actor_id: 'actor-1',
  product: 'app',
  product_version: '1.0.0',
  started_at: STARTED,
  properties: { plan: 'pro' },
  ...o,
});
const sessionEnd = (sessionId: string, o: Record<string, unknown> = {}) => ({ session_id: sessionId, ended_at: ENDED, end_reason: 'normal', ...o });
/** An sdk_recovery end with the start context: it would create the session if it were accepted. */
const recoveryEnd = (o: Record<string, unknown> = {}) =>
  sessionEnd(uuidv7(), { end_reason: 'sdk_recovery', actor_id: 'actor-1', product: 'app', product_version: '1.0.0', started_at: STARTED, ...o });
const exception = (o: Record<string, unknown> = {}) => ({
  exception_id: uuidv7(),
  exception_type: 'TypeError',
  severity: 'non_fatal',
  occurred_at: '2026-01-02T03:04:05.678Z',
  actor_id: 'actor-1',
  product: 'app',
  product_version: '1.0.0',
  message: "Cannot read properties of undefined (reading 'sku')",
  stack_trace: TRACE,
  breadcrumbs: [{ category: 'nav', message: '/cart' }],
  environment_context: { os: 'linux', runtime: 'node 22' },
  ...o,
});
const link = (o: Record<string, unknown> = {}) => ({
  anonymous_actor_id: `anon-${uuidv7()}`,
  identified_actor_id: 'user-42',
  identified_at: '2026-01-02T03:04:05.000Z',
  product: 'app',
  product_version: '1.0.0',
  traits: { plan: 'pro' },
  ...o,
});

function send(kind: Kind, key: string, body: string | Record<string, unknown>): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: URLS[kind],
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The body as JSON text with `field` set to the raw JSON text `json` (for what JSON.stringify cannot write, such as a "__proto__" key). */
function withRawField(body: Record<string, unknown>, field: string, json: string): string {
  const text = JSON.stringify({ ...body, [field]: '@RAW@' });
  assert.ok(text.includes('"@RAW@"'));
  return text.replace('"@RAW@"', json);
}

/** What the tenant has stored on these routes, and its dead letters per kind. */
async function storeState(tenantId: string): Promise<Record<string, number>> {
  const [row] = await t.db.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM sessions WHERE tenant_id = $1) AS sessions,
            (SELECT count(*)::int FROM sessions WHERE tenant_id = $1 AND ended_at IS NULL) AS open_sessions,
            (SELECT count(*)::int FROM pending_session_ends WHERE tenant_id = $1) AS pending_ends,
            (SELECT count(*)::int FROM session_early_signs WHERE tenant_id = $1) AS early_signs,
            (SELECT count(*)::int FROM exceptions WHERE tenant_id = $1) AS exceptions,
            (SELECT count(*)::int FROM actor_links WHERE tenant_id = $1) AS links,
            (SELECT count(*)::int FROM actor_traits WHERE tenant_id = $1) AS traits,
            (SELECT count(*)::int FROM product_versions WHERE tenant_id = $1) AS versions,
            (SELECT count(*)::int FROM invalid_events WHERE tenant_id = $1 AND kind = 'session') AS dead_session,
            (SELECT count(*)::int FROM invalid_events WHERE tenant_id = $1 AND kind = 'session_end') AS dead_session_end,
            (SELECT count(*)::int FROM invalid_events WHERE tenant_id = $1 AND kind = 'exception') AS dead_exception,
            (SELECT count(*)::int FROM invalid_events WHERE tenant_id = $1 AND kind = 'identify') AS dead_identify`,
    [tenantId],
  );
  return row!;
}

function assertNoPollution(): void {
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
  assert.equal({}.constructor, Object);
}

/**
 * The record is refused with a 422 problem whose code is `code` and whose first error names
 * `field`; nothing is stored (sessions, ends, exceptions, links, traits, versions stay as they
 * were) and the refusal is kept as one dead letter of its kind.
 */
async function assertRefused(kind: Kind, tenant: Tenant, body: string | Record<string, unknown>, field: string, code = 'validation_error'): Promise<void> {
  const before = await storeState(tenant.id);
  const res = await send(kind, tenant.ingestKey, body);
  const what = `${kind} ${field}: ${res.body.slice(0, 300)}`;
  assert.equal(res.statusCode, 422, what);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/, what);
  const problem = res.json() as { code: string; errors?: { field: string }[] };
  assert.equal(problem.code, code, what);
  assert.equal(problem.errors?.[0]?.field, field, what);
  const afterState = await storeState(tenant.id);
  assert.deepEqual(afterState, { ...before, [`dead_${kind}`]: before[`dead_${kind}`]! + 1 }, what);
  assertNoPollution();
}

/** A tenant with a product "app" and one open session (so that an end has something it could wrongly close). */
async function tenantWithOpenSession(): Promise<Tenant & { sessionId: string }> {
  const tenant = await tenantWithProduct(t.app);
  const start = sessionStart();
  const res = await send('session', tenant.ingestKey, start);
  assert.equal(res.statusCode, 200, res.body);
  return { ...tenant, sessionId: start.session_id };
}

const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype'] as const;
const polluter = '{"polluted": "yes"}';

describe('BAD-INPUTS hostile JSON on session, session end, exception and identify (lines 7, 10, 11, 13)', () => {
  it('BAD-INPUTS 7: a __proto__, constructor or prototype key in a session start (properties, top level) answers 422 validation_error naming its path; nothing stored, no prototype polluted', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const key of HOSTILE_KEYS) {
      await assertRefused('session', tenant, withRawField(sessionStart(), 'properties', `{"plan": "pro", "${key}": ${polluter}}`), `properties.${key}`);
      await assertRefused('session', tenant, withRawField(sessionStart(), 'properties', `{"${key}": "yes"}`), `properties.${key}`);
      await assertRefused('session', tenant, withRaw(sessionStart(), `"${key}": ${polluter}`), key);
    }
    assert.equal((await storeState(tenant.id)).sessions, 0);
  });

  it('BAD-INPUTS 7: a __proto__, constructor or prototype key in a session end (top level, recovery context) answers 422 naming it; the session stays open', async () => {
    const tenant = await tenantWithOpenSession();
    for (const key of HOSTILE_KEYS) {
      await assertRefused('session_end', tenant, withRaw(sessionEnd(tenant.sessionId), `"${key}": ${polluter}`), key);
      await assertRefused('session_end', tenant, withRaw(recoveryEnd(), `"${key}": "yes"`), key);
    }
    const state = await storeState(tenant.id);
    assert.equal(state.sessions, 1);
    assert.equal(state.open_sessions, 1);
  });

  it('BAD-INPUTS 7: a __proto__, constructor or prototype key in an exception (breadcrumbs[i], environment_context, top level) answers 422 naming its path; nothing stored, no prototype polluted', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const key of HOSTILE_KEYS) {
      await assertRefused(
        'exception',
        tenant,
        withRawField(exception(), 'breadcrumbs', `[{"category": "nav", "${key}": ${polluter}}]`),
        `breadcrumbs[0].${key}`,
      );
      await assertRefused(
        'exception',
        tenant,
        withRawField(exception(), 'breadcrumbs', `[{"category": "nav"}, {"data": {"${key}": ${polluter}}}]`),
        `breadcrumbs[1].data.${key}`,
      );
      await assertRefused(
        'exception',
        tenant,
        withRawField(exception(), 'environment_context', `{"os": "linux", "${key}": ${polluter}}`),
        `environment_context.${key}`,
      );
      await assertRefused(
        'exception',
        tenant,
        withRawField(exception(), 'environment_context', `{"app": {"${key}": "yes"}}`),
        `environment_context.app.${key}`,
      );
      await assertRefused('exception', tenant, withRaw(exception(), `"${key}": ${polluter}`), key);
    }
    assert.equal((await storeState(tenant.id)).exceptions, 0);
  });

  it('BAD-INPUTS 7: a __proto__, constructor or prototype key in an identify body (top level, traits) answers 422 naming its path; no link stored, no prototype polluted', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const key of HOSTILE_KEYS) {
      await assertRefused('identify', tenant, withRaw(link(), `"${key}": ${polluter}`), key);
      await assertRefused('identify', tenant, withRawField(link(), 'traits', `{"plan": "pro", "${key}": ${polluter}}`), `traits.${key}`);
    }
    assert.equal((await storeState(tenant.id)).links, 0);
  });

  // Where a string can sit in each record, and the field the refusal names.
  interface Place {
    where: string;
    body: (bad: string, sessionId: string) => Record<string, unknown>;
    field: string;
    code?: string;
  }
  const PLACES: Record<Kind, Place[]> = {
    session: [
      { where: 'session_id', body: (s) => sessionStart({ session_id: `${uuidv7()}${s}` }), field: 'session_id' },
      { where: 'actor_id', body: (s) => sessionStart({ actor_id: `actor${s}` }), field: 'actor_id' },
      { where: 'product_version', body: (s) => sessionStart({ product_version: `1.0${s}` }), field: 'product_version' },
      { where: 'started_at', body: (s) => sessionStart({ started_at: `${STARTED}${s}` }), field: 'started_at' },
      { where: 'a property value', body: (s) => sessionStart({ properties: { plan: `pro${s}` } }), field: 'properties.plan' },
      { where: 'a property key', body: (s) => sessionStart({ properties: { [`plan${s}`]: 'pro' } }), field: 'properties' },
      { where: 'account_id', body: (s) => sessionStart({ account_id: `acme${s}` }), field: 'account_id', code: 'invalid_account_id' },
    ],
    session_end: [
      { where: 'session_id', body: (s, id) => sessionEnd(`${id}${s}`), field: 'session_id' },
      { where: 'ended_at', body: (s, id) => sessionEnd(id, { ended_at: `${ENDED}${s}` }), field: 'ended_at' },
      { where: 'end_reason', body: (s, id) => sessionEnd(id, { end_reason: `normal${s}` }), field: 'end_reason' },
      { where: 'product on an end', body: (s, id) => sessionEnd(id, { product: `app${s}` }), field: 'product' },
      { where: "a recovery's actor_id", body: (s) => recoveryEnd({ actor_id: `actor${s}` }), field: 'actor_id' },
      { where: "a recovery's product_version", body: (s) => recoveryEnd({ product_version: `1.0${s}` }), field: 'product_version' },
    ],
    exception: [
      { where: 'exception_id', body: (s) => exception({ exception_id: `${uuidv7()}${s}` }), field: 'exception_id' },
      { where: 'actor_id', body: (s) => exception({ actor_id: `actor${s}` }), field: 'actor_id' },
      { where: 'message', body: (s) => exception({ message: `Cannot read${s} properties` }), field: 'message' },
      { where: 'stack_trace', body: (s) => exception({ stack_trace: `${TRACE}${s}` }), field: 'stack_trace' },
      { where: 'an environment_context value', body: (s) => exception({ environment_context: { os: `linux${s}` } }), field: 'environment_context.os' },
      {
        where: 'a nested environment_context value',
        body: (s) => exception({ environment_context: { screen: { names: ['main', `side${s}`] } } }),
        field: 'environment_context.screen.names[1]',
      },
      { where: 'an environment_context key', body: (s) => exception({ environment_context: { [`os${s}`]: 'linux' } }), field: 'environment_context' },
      { where: 'product_version', body: (s) => exception({ product_version: `1.0${s}` }), field: 'product_version' },
    ],
    identify: [
      { where: 'anonymous_actor_id', body: (s) => link({ anonymous_actor_id: `anon-${uuidv7()}${s}` }), field: 'anonymous_actor_id' },
      { where: 'identified_actor_id', body: (s) => link({ identified_actor_id: `user${s}` }), field: 'identified_actor_id' },
      { where: 'identified_at', body: (s) => link({ identified_at: `2026-01-02T03:04:05Z${s}` }), field: 'identified_at' },
      { where: 'product_version', body: (s) => link({ product_version: `1.0${s}` }), field: 'product_version' },
      { where: 'a trait value', body: (s) => link({ traits: { plan: `pro${s}` } }), field: 'traits.plan' },
      { where: 'a trait key', body: (s) => link({ traits: { [`plan${s}`]: 'pro' } }), field: 'traits' },
    ],
  };
  const ROUTE_NAMES: Record<Kind, string> = {
    session: 'a session start',
    session_end: 'a session end',
    exception: 'an exception',
    identify: 'an identify call',
  };

  for (const kind of Object.keys(PLACES) as Kind[]) {
    const places = PLACES[kind];
    it(`BAD-INPUTS 10: \\u0000 in ${ROUTE_NAMES[kind]} (${places.map((p) => p.where).join(', ')}) answers 422 naming the field, never a 500; nothing stored`, async () => {
      const tenant = await tenantWithOpenSession();
      for (const p of places) {
        for (const nul of ['\u0000', '\u0000tail']) {
          const body = p.body(nul, tenant.sessionId);
          assert.match(JSON.stringify(body), /\\u0000/); // sent as the JSON escape
          await assertRefused(kind, tenant, body, p.field, p.code);
        }
      }
    });
  }

  it('BAD-INPUTS 10: \\u0000 in a breadcrumb (value or key) answers 422 naming it: a NUL is refused in breadcrumbs too', async () => {
    const tenant = await tenantWithProduct(t.app);
    await assertRefused('exception', tenant, exception({ breadcrumbs: [{ category: 'nav', message: '/cart\u0000' }] }), 'breadcrumbs[0].message');
    await assertRefused('exception', tenant, exception({ breadcrumbs: ['ok', 'a\u0000b'] }), 'breadcrumbs[1]');
    await assertRefused('exception', tenant, exception({ breadcrumbs: [{ data: { 'k\u0000': 'v' } }] }), 'breadcrumbs[0].data');
  });

  // A lone surrogate in breadcrumbs is the one place it is replaced (U+FFFD) rather than refused:
  // docs/api.md "Replaced rather than refused", tested in test/what-clients-send.test.ts.
  for (const kind of Object.keys(PLACES) as Kind[]) {
    const places = PLACES[kind];
    it(`BAD-INPUTS 11: a lone surrogate in ${ROUTE_NAMES[kind]} (${places.map((p) => p.where).join(', ')}) answers 422 naming the field; nothing stored`, async () => {
      const tenant = await tenantWithOpenSession();
      for (const p of places) {
        for (const lone of ['\ud800', '\udc00', '\udc00\ud800']) {
          const body = p.body(lone, tenant.sessionId);
          assert.match(JSON.stringify(body), /\\ud[89a-f][0-9a-f]{2}/); // sent as the JSON escape
          await assertRefused(kind, tenant, body, p.field, p.code);
        }
      }
    });
  }

  it('BAD-INPUTS 11: a well-formed surrogate pair (an emoji) in the same fields is accepted and stored as sent', async () => {
    const tenant = await tenantWithProduct(t.app);
    const emoji = '\ud83d\ude00';
    const start = sessionStart({ actor_id: `actor${emoji}`, properties: { plan: `pro${emoji}` } });
    assert.equal((await send('session', tenant.ingestKey, start)).statusCode, 200);
    const [s] = await t.db.query<{ actor_id: string; properties: unknown }>(
      'SELECT actor_id, properties FROM sessions WHERE tenant_id = $1 AND session_id = $2',
      [tenant.id, start.session_id],
    );
    assert.deepEqual(s, { actor_id: start.actor_id, properties: start.properties });

    const e = exception({ message: `boom ${emoji}`, environment_context: { os: `linux${emoji}` } });
    assert.equal((await send('exception', tenant.ingestKey, e)).statusCode, 200);
    const [x] = await t.db.query<{ message: string; environment_context: unknown }>(
      'SELECT message, environment_context FROM exceptions WHERE tenant_id = $1 AND exception_id = $2',
      [tenant.id, e.exception_id],
    );
    assert.deepEqual(x, { message: e.message, environment_context: e.environment_context });

    const l = link({ anonymous_actor_id: `anon${emoji}`, identified_actor_id: `user${emoji}` });
    assert.equal((await send('identify', tenant.ingestKey, l)).statusCode, 200);
    const [a] = await t.db.query<{ identified_actor_id: string }>(
      'SELECT identified_actor_id FROM actor_links WHERE tenant_id = $1 AND anonymous_actor_id = $2',
      [tenant.id, l.anonymous_actor_id],
    );
    assert.equal(a?.identified_actor_id, l.identified_actor_id);
  });

  /** received_at was set by the server while the request ran (within a second's slack). */
  function assertServerTime(value: unknown, from: number, to: number): void {
    const ms = new Date(value as Date).getTime();
    assert.ok(ms >= from - 1000 && ms <= to + 1000, `received_at ${String(value)}`);
  }

  it("BAD-INPUTS 13: an exception sent with fingerprint, tenant_id, product_id, received_at, created_at and status gets the computed fingerprint, the key's tenant and the server's received_at", async () => {
    const tenant = await tenantWithProduct(t.app);
    const other = await createTenant(t.app);
    const otherProduct = await createProduct(t.app, other.adminKey, 'app');
    const fake = 'f'.repeat(32);
    const e = exception({
      fingerprint: fake,
      tenant_id: other.id,
      product_id: otherProduct.id,
      received_at: '2000-01-01T00:00:00Z',
      created_at: '2000-01-01T00:00:00Z',
      status: 'resolved',
    });
    const from = Date.now();
    const res = await send('exception', tenant.ingestKey, e);
    const to = Date.now();
    assert.equal(res.statusCode, 200, res.body);
    const answer = res.json() as { exception_id: string; status: string; fingerprint: string };
    assert.equal(answer.exception_id, e.exception_id);
    assert.equal(answer.status, 'accepted');
    assert.match(answer.fingerprint, /^[0-9a-f]{32}$/);
    assert.notEqual(answer.fingerprint, fake);

    // The same exception without the server's fields gets the same fingerprint.
    const twin = exception();
    const twinRes = await send('exception', tenant.ingestKey, twin);
    assert.equal(twinRes.statusCode, 200, twinRes.body);
    assert.equal(twinRes.json().fingerprint, answer.fingerprint);

    const rows = await t.db.query<{ tenant_id: string; product_id: string; fingerprint: string; received_at: Date }>(
      'SELECT tenant_id::text AS tenant_id, product_id::text AS product_id, fingerprint, received_at FROM exceptions WHERE exception_id = $1',
      [e.exception_id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.tenant_id, tenant.id);
    assert.equal(rows[0]!.product_id, tenant.productId);
    assert.equal(rows[0]!.fingerprint, answer.fingerprint);
    assertServerTime(rows[0]!.received_at, from, to);
    assert.equal((await storeState(other.id)).exceptions, 0);
    const [fakes] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM exceptions WHERE tenant_id IN ($1, $2) AND fingerprint = $3', [
      tenant.id,
      other.id,
      fake,
    ]);
    assert.equal(fakes!.n, 0);
  });

  it("BAD-INPUTS 13: a session start sent with end_reason, ended_at, status, last_seen_at, received_at and tenant_id is stored open with the server's values", async () => {
    const tenant = await tenantWithProduct(t.app);
    const other = await createTenant(t.app);
    const s = sessionStart({
      end_reason: 'timeout',
      ended_at: ENDED,
      status: 'ended',
      last_seen_at: '2099-01-01T00:00:00.000Z',
      received_at: '2000-01-01T00:00:00Z',
      tenant_id: other.id,
    });
    const from = Date.now();
    const res = await send('session', tenant.ingestKey, s);
    const to = Date.now();
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { session_id: s.session_id, status: 'accepted' });

    const rows = await t.db.query<{
      tenant_id: string;
      started_at: Date;
      last_seen_at: Date;
      ended_at: Date | null;
      end_reason: string | null;
      received_at: Date;
    }>('SELECT tenant_id::text AS tenant_id, started_at, last_seen_at, ended_at, end_reason, received_at FROM sessions WHERE session_id = $1', [s.session_id]);
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.equal(row.tenant_id, tenant.id);
    assert.equal(row.ended_at, null);
    assert.equal(row.end_reason, null);
    assert.equal(new Date(row.started_at).toISOString(), STARTED);
    assert.equal(new Date(row.last_seen_at).toISOString(), STARTED, 'last_seen_at is the start, not the client value');
    assertServerTime(row.received_at, from, to);
    assert.equal((await storeState(other.id)).sessions, 0);

    // Still open: a client end now closes it as usual.
    const end = await send('session_end', tenant.ingestKey, sessionEnd(s.session_id));
    assert.equal(end.statusCode, 200, end.body);
    assert.deepEqual(end.json(), { session_id: s.session_id, status: 'ended' });
  });

  it("BAD-INPUTS 13: an identify call sent with tenant_id, product_id and received_at is stored under the key's tenant and product with the server's received_at", async () => {
    const tenant = await tenantWithProduct(t.app);
    const other = await createTenant(t.app);
    const otherProduct = await createProduct(t.app, other.adminKey, 'app');
    const l = link({ tenant_id: other.id, product_id: otherProduct.id, received_at: '2000-01-01T00:00:00Z' });
    const from = Date.now();
    const res = await send('identify', tenant.ingestKey, l);
    const to = Date.now();
    assert.equal(res.statusCode, 200, res.body);
    const rows = await t.db.query<{ tenant_id: string; product_id: string; received_at: Date }>(
      'SELECT tenant_id::text AS tenant_id, product_id::text AS product_id, received_at FROM actor_links WHERE anonymous_actor_id = $1',
      [l.anonymous_actor_id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.tenant_id, tenant.id);
    assert.equal(rows[0]!.product_id, tenant.productId);
    assertServerTime(rows[0]!.received_at, from, to);
    assert.equal((await storeState(other.id)).links, 0);
  });
});
