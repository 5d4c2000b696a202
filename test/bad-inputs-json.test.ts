// BAD-INPUTS.md 7–13 over app.inject, bodies written as raw JSON text where JSON.stringify cannot say it; real app, real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { v4 as uuidv4 } from 'uuid';
import { countStored, createProduct, createTenant, event, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';
import { assertRejectedAlone, deadLetterReasons, rawBatch, storedIds, withRaw } from './helpers/verdicts.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const idOf = (e: Record<string, unknown>) => e.event_id as string;
const sorted = (ids: string[]) => [...ids].sort();

/** Every element of `elements` at an index not in `rejected` is a good event; returns their ids. */
function goodIds(elements: (Record<string, unknown> | string)[], rejected: Record<number, unknown>): string[] {
  return elements.filter((_, i) => !(i in rejected)).map((e) => (typeof e === 'string' ? (JSON.parse(e) as { event_id: string }).event_id : idOf(e)));
}

describe('BAD-INPUTS hostile JSON (lines 7–13)', () => {
  for (const key of ['__proto__', 'constructor', 'prototype']) {
    it(`BAD-INPUTS 7: a "${key}" key anywhere in an element rejects that element alone; no prototype is polluted`, async () => {
      const tenant = await tenantWithProduct(t.app);
      const elements = [
        event(),
        withRaw(event(), `"${key}": {"polluted": "yes"}`), // top level, object value
        event(),
        withRaw(event(), `"${key}": "yes"`), // top level, scalar value
        withRaw(event({ properties: undefined }), `"properties": {"${key}": "yes", "ok": "x"}`),
        withRaw(event({ properties: undefined }), `"properties": {"${key}": {"polluted": "yes"}}`),
        withRaw(event(), `"context": {"app": {"${key}": {"polluted": "yes"}}}`), // nested in a field the server ignores
        withRaw(event(), `"breadcrumbs": [{"data": {"${key}": {"polluted": "yes"}}}]`), // inside an array
        event(),
      ];
      const rejected = { 1: 'invalid_event', 3: 'invalid_event', 4: 'invalid_event', 5: 'invalid_event', 6: 'invalid_event', 7: 'invalid_event' };
      const res = await postEvents(t.app, tenant.ingestKey, rawBatch(elements));
      assertRejectedAlone(res, elements.length, rejected);

      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
      assert.equal({}.constructor, Object);
      assert.deepEqual(await storedIds(t.db, tenant.id), sorted(goodIds(elements, rejected)));
      assert.deepEqual(await deadLetterReasons(t.db, tenant.id), Array(6).fill('invalid_event'));
      // The dead letters can be listed back (no 500 while serialising such a payload).
      const listed = await get(t.app, tenant.adminKey, '/v1/invalid-events');
      assert.equal(listed.statusCode, 200, listed.body);
      assert.equal(listed.json().data.length, 6);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }

  it('BAD-INPUTS 8: an element nested 10,000+ levels deep is rejected alone, never a 500', async () => {
    const tenant = await tenantWithProduct(t.app);
    const deepArrays = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
    const deepObjects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const elements = [
      event(),
      withRaw(event(), `"environment_context": ${deepObjects(10_000)}`),
      event(),
      withRaw(event(), `"breadcrumbs": ${deepArrays(10_000)}`),
      withRaw(event({ properties: undefined }), `"properties": {"p": ${deepArrays(10_000)}}`),
      withRaw(event(), `"breadcrumbs": [${deepObjects(20_000)}]`),
      withRaw(event(), `"environment_context": ${deepArrays(100_000)}`),
      event(),
    ];
    const either = ['event_too_large', 'invalid_event'] as const;
    const rejected = { 1: either, 3: either, 4: either, 5: either, 6: either };
    const res = await postEvents(t.app, tenant.ingestKey, rawBatch(elements));
    assertRejectedAlone(res, elements.length, rejected);
    assert.deepEqual(await storedIds(t.db, tenant.id), sorted(goodIds(elements, rejected)));
    assert.equal((await deadLetterReasons(t.db, tenant.id)).length, 5);
    const listed = await get(t.app, tenant.adminKey, '/v1/invalid-events');
    assert.equal(listed.statusCode, 200, listed.body.slice(0, 300));
    assert.equal(listed.json().data.length, 5);
  });

  it('BAD-INPUTS 9: property numbers that do not survive a round trip (1e400, 2^63, 2^53+1) are rejected alone, never stored as null', async () => {
    const tenant = await tenantWithProduct(t.app);
    const withProps = (rawProps: string) => withRaw(event({ properties: undefined }), `"properties": ${rawProps}`);
    const exact = event({
      properties: { max_safe: 9007199254740991, min_safe: -9007199254740991, small: 1.2345e-300, tiny: 5e-324, tenth: 0.1, frac: -123456.789 },
    });
    const elements = [
      event(),
      withProps('{"n": 1e400}'),
      withProps('{"n": -1e400}'),
      withProps('{"n": 9223372036854775808}'), // 2^63
      withProps('{"n": -9223372036854775809}'),
      withProps('{"n": 18446744073709551616}'), // 2^64
      withProps('{"n": 9007199254740993}'), // 2^53 + 1 parses as 2^53
      withProps('{"ok": "x", "n": 1e400}'),
      withProps('{"n": 1e-400}'), // underflows: parses as 0
      withProps(`{"n": -0.${'0'.repeat(400)}1}`),
      exact,
      event(),
    ];
    const rejected = {
      1: 'invalid_event',
      2: 'invalid_event',
      3: 'invalid_event',
      4: 'invalid_event',
      5: 'invalid_event',
      6: 'invalid_event',
      7: 'invalid_event',
      8: 'invalid_event',
      9: 'invalid_event',
    };
    const res = await postEvents(t.app, tenant.ingestKey, rawBatch(elements));
    assertRejectedAlone(res, elements.length, rejected);
    assert.deepEqual(await storedIds(t.db, tenant.id), sorted(goodIds(elements, rejected)));
    const nulls = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events e, jsonb_each(e.properties) p WHERE e.tenant_id = $1 AND p.value = 'null'::jsonb`,
      [tenant.id],
    );
    assert.equal(nulls[0]!.n, 0);
    // The other side: numbers that do survive the round trip are stored exactly.
    const [row] = await t.db.query<{ properties: unknown }>('SELECT properties FROM events WHERE tenant_id = $1 AND event_id = $2', [tenant.id, idOf(exact)]);
    assert.deepEqual(row!.properties, exact.properties);
    // A zero written with an exponent is zero; the same text inside a string (after an escaped backslash or quote) is a string.
    const zeros = withProps(String.raw`{"a": 0e-400, "b": -0.0E-999, "s": "1e-400", "t": "x\\", "u": 1e-400}`);
    const fineEvent = event({ properties: undefined });
    const fine = withRaw(fineEvent, String.raw`"properties": {"a": 0e-400, "b": 0.0E-999, "s": "1e-400 \"1e-400\"", "t": "x\\"}`);
    const again = await postEvents(t.app, tenant.ingestKey, rawBatch([zeros, fine]));
    assertRejectedAlone(again, 2, { 0: 'invalid_event' });
    assert.match(again.json().results[0].message, /properties\.u/);
    const [kept] = await t.db.query<{ properties: unknown }>('SELECT properties FROM events WHERE tenant_id = $1 AND event_id = $2', [
      tenant.id,
      idOf(fineEvent),
    ]);
    assert.deepEqual(kept!.properties, { a: 0, b: 0, s: '1e-400 "1e-400"', t: 'x\\' });
  });

  // Where each string of an element can sit, and the code its rejection carries.
  const FIELDS: { where: string; make: (s: string) => Record<string, unknown>; reason: string; column?: string }[] = [
    { where: 'category', make: (s) => event({ category: `ui${s}` }), reason: 'invalid_event', column: 'category' },
    { where: 'name', make: (s) => event({ name: `click${s}` }), reason: 'invalid_event', column: 'name' },
    { where: 'actor_id', make: (s) => event({ actor_id: `actor${s}` }), reason: 'invalid_event', column: 'actor_id' },
    { where: 'product', make: (s) => event({ product: `app${s}` }), reason: 'invalid_event' },
    { where: 'product_version', make: (s) => event({ product_version: `1.0${s}` }), reason: 'invalid_event', column: 'product_version' },
    { where: 'a property value', make: (s) => event({ properties: { label: `save${s}` } }), reason: 'invalid_event', column: 'properties' },
    { where: 'a property key', make: (s) => event({ properties: { [`label${s}`]: 'save' } }), reason: 'invalid_event', column: 'properties' },
    { where: 'schema_version', make: (s) => event({ schema_version: `v2${s}` }), reason: 'invalid_event', column: 'schema_version' },
    { where: 'an unknown field', make: (s) => event({ note: `n${s}` }), reason: 'invalid_event' },
    { where: 'an unknown field name', make: (s) => event({ [`note${s}`]: 'n' }), reason: 'invalid_event' },
    { where: 'a nested unknown field', make: (s) => event({ context: { os: [`linux${s}`] } }), reason: 'invalid_event' },
    { where: 'event_id', make: (s) => event({ event_id: `${uuidv4()}${s}` }), reason: 'invalid_event' },
    { where: 'timestamp', make: (s) => event({ timestamp: `2026-01-02T03:04:05Z${s}` }), reason: 'invalid_event' },
    { where: 'session_id', make: (s) => event({ session_id: `${uuidv4()}${s}` }), reason: 'invalid_event' },
    { where: 'account_id', make: (s) => event({ account_id: `acme${s}` }), reason: 'invalid_account_id', column: 'account_id' },
    { where: 'license_id', make: (s) => event({ license_id: `LIC${s}` }), reason: 'invalid_license_id', column: 'license_id' },
  ];

  for (const f of FIELDS) {
    it(`BAD-INPUTS 10: \\u0000 in ${f.where} is rejected alone (${f.reason}), never a 500`, async () => {
      const tenant = await tenantWithProduct(t.app);
      const elements = [event(), f.make('\u0000'), event(), f.make('\u0000tail'), event()];
      assert.match(JSON.stringify(elements[1]), /\\u0000/); // sent as the JSON escape
      const rejected = { 1: f.reason, 3: f.reason };
      const res = await postEvents(t.app, tenant.ingestKey, elements);
      assertRejectedAlone(res, elements.length, rejected);
      assert.deepEqual(await storedIds(t.db, tenant.id), sorted(goodIds(elements, rejected)));
      assert.deepEqual(await deadLetterReasons(t.db, tenant.id), [f.reason, f.reason]);
    });
  }

  for (const f of FIELDS) {
    it(`BAD-INPUTS 11: a lone surrogate in ${f.where} is rejected alone (${f.reason}); a real pair is not`, async () => {
      const tenant = await tenantWithProduct(t.app);
      const emoji = f.column ? f.make('\ud83d\ude00') : undefined; // the same field with a well-formed pair
      const elements = [event(), f.make('\ud800'), event(), f.make('\udc00'), f.make('\udc00\ud800'), ...(emoji ? [emoji] : []), event()];
      assert.match(JSON.stringify(elements[1]), /\\ud800/); // sent as the JSON escape
      const rejected = { 1: f.reason, 3: f.reason, 4: f.reason };
      const res = await postEvents(t.app, tenant.ingestKey, elements);
      assertRejectedAlone(res, elements.length, rejected);
      assert.deepEqual(await storedIds(t.db, tenant.id), sorted(goodIds(elements, rejected)));
      assert.deepEqual(await deadLetterReasons(t.db, tenant.id), [f.reason, f.reason, f.reason]);
      if (emoji && f.column) {
        const [row] = await t.db.query<Record<string, unknown>>(`SELECT ${f.column} AS v FROM events WHERE tenant_id = $1 AND event_id = $2`, [
          tenant.id,
          idOf(emoji),
        ]);
        const sent = f.column === 'properties' ? emoji.properties : emoji[f.column];
        assert.deepEqual(row!.v, sent);
      }
    });
  }

  it('BAD-INPUTS 12: wrong types are rejected alone (invalid_event), never coerced', async () => {
    const tenant = await tenantWithProduct(t.app);
    const typed = event({ properties: { n: 42, s: '42', b: true, f: 1.5 } });
    const elements: (Record<string, unknown> | string)[] = [
      event(),
      event({ category: 123 }),
      event({ name: 42 }),
      event({ actor_id: 42 }),
      event({ actor_id: true }),
      event({ product: 42 }),
      event({ product_version: 1.5 }),
      event({ event_id: 123 }),
      event({ session_id: 42 }),
      event({ account_id: 42 }),
      event({ license_id: ['LIC-1'] }),
      event({ properties: { p: {} } }),
      event({ properties: { p: [] } }),
      event({ properties: { p: null } }),
      event({ properties: { p: ['a', 'b'] } }),
      event({ properties: [] }),
      event({ properties: 'k=v' }),
      '"an event"',
      '42',
      'null',
      '[]',
      'true',
      typed,
      event(),
    ];
    const rejected: Record<number, string> = {};
    for (let i = 1; i <= 21; i++) rejected[i] = 'invalid_event';
    const res = await postEvents(t.app, tenant.ingestKey, rawBatch(elements));
    const results = assertRejectedAlone(res, elements.length, rejected);
    assert.equal(results[17]!.event_id, null); // a non-object element has no event_id to echo
    assert.deepEqual(
      await storedIds(t.db, tenant.id),
      sorted([idOf(elements[0] as Record<string, unknown>), idOf(typed), idOf(elements[23] as Record<string, unknown>)]),
    );
    const coerced = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND (category = '123' OR name = '42' OR actor_id IN ('42', 'true') OR product_version = '1.5')`,
      [tenant.id],
    );
    assert.equal(coerced[0]!.n, 0);
    // Accepted scalars keep their JSON types: 42 stays a number, "42" a string.
    const [row] = await t.db.query<{ properties: unknown; n_type: string; s_type: string }>(
      `SELECT properties, jsonb_typeof(properties->'n') AS n_type, jsonb_typeof(properties->'s') AS s_type FROM events WHERE tenant_id = $1 AND event_id = $2`,
      [tenant.id, idOf(typed)],
    );
    assert.deepEqual(row!.properties, typed.properties);
    assert.equal(row!.n_type, 'number');
    assert.equal(row!.s_type, 'string');
  });

  it('BAD-INPUTS 13: fields the server owns (tenant_id, product_id, fingerprint, created_at, status, received_at) are ignored', async () => {
    const tenant = await tenantWithProduct(t.app);
    const other = await createTenant(t.app);
    const otherProduct = await createProduct(t.app, other.adminKey, 'app');
    const e = event({
      tenant_id: other.id,
      product_id: otherProduct.id,
      fingerprint: 'f'.repeat(40),
      created_at: '2000-01-01T00:00:00Z',
      received_at: '2000-01-01T00:00:00Z',
      status: 'rejected',
      duplicate: true,
      api_key_id: uuidv4(),
    });
    const before = Date.now();
    const res = await postEvents(t.app, tenant.ingestKey, [e]);
    const afterMs = Date.now();
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().results, [{ index: 0, event_id: e.event_id, status: 'accepted' }]);

    const rows = await t.db.query<{ tenant_id: string; product_id: string; received_at: Date }>(
      'SELECT tenant_id::text AS tenant_id, product_id::text AS product_id, received_at FROM events WHERE event_id = $1',
      [e.event_id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.tenant_id, tenant.id);
    assert.equal(rows[0]!.product_id, tenant.productId);
    const receivedAt = new Date(rows[0]!.received_at).getTime();
    assert.ok(receivedAt >= before - 1000 && receivedAt <= afterMs + 1000, `received_at ${rows[0]!.received_at}`);
    assert.equal(await countStored(t.db, other.id), 0);
  });
});
