// Property-based fuzzing (fast-check) of the event pipeline and every ingestion endpoint, over
// app.inject against a real store. Inputs are generated; nothing else is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { v7 as uuidv7 } from 'uuid';
import { event, postEvents, startTestApp, tenantWithProduct, type Tenant, type TestApp } from './helpers/app.js';

let t: TestApp;
let tenant: Tenant & { productId: string };
before(async () => {
  t = await startTestApp();
  tenant = await tenantWithProduct(t.app, 'enterprise');
});
after(async () => t.close());

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const hostileKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'account_id', 'license', 'toString', 'hasOwnProperty', '', '\u0000', '\ud800');
const hostileString = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('\u0000', '\ud800', 'x'.repeat(300), '😀'.repeat(130), '  ', '\t'));
/** Any JSON value, with hostile keys and strings mixed in. */
const anyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.constantFrom(1e308, -0, 2 ** 63, Number.MAX_SAFE_INTEGER + 2),
    hostileString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string(), hostileKey), tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** A valid event with one field replaced by generated junk, or left alone. */
const mutatedEvent = fc
  .record({
    field: fc.constantFrom(
      'event_id',
      'category',
      'name',
      'timestamp',
      'actor_id',
      'product',
      'product_version',
      'properties',
      'session_id',
      'account_id',
      'license_id',
      'extra',
      'none',
    ),
    value: anyJson,
  })
  .map(({ field, value }) => {
    const e = event();
    if (field !== 'none') e[field] = value;
    return e;
  });

/** Serialises like JSON.stringify but keeps "__proto__" keys as data, the way a client would send them. */
function toJsonText(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${toJsonText((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  const s = JSON.stringify(v);
  return s === undefined ? 'null' : s;
}

const withProto = (o: Record<string, unknown>) => {
  const copy: Record<string, unknown> = { ...o };
  Object.defineProperty(copy, '__proto__', { value: { polluted: true }, enumerable: true, configurable: true, writable: true });
  return copy;
};

describe('fuzzing the ingestion endpoints', () => {
  it('POST /v1/events: never a 500, one result per element, valid neighbours always accepted, no prototype polluted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(mutatedEvent, anyJson, mutatedEvent.map(withProto)), { minLength: 1, maxLength: 12 }),
        fc.nat(11),
        async (junk, at) => {
          const valid = event({ event_id: uuidv7() });
          const batch = [...junk];
          batch.splice(at % (batch.length + 1), 0, valid);
          const res = await postEvents(t.app, tenant.ingestKey, toJsonText(batch));
          assert.ok(res.statusCode === 200 || res.statusCode === 207, `${res.statusCode} ${res.body.slice(0, 300)}`);
          const body = res.json();
          assert.equal(body.results.length, batch.length);
          assert.equal(body.accepted + body.rejected, batch.length);
          const mine = body.results[batch.indexOf(valid)];
          assert.equal(mine.status, 'accepted', JSON.stringify(mine));
          assert.equal(({} as Record<string, unknown>).polluted, undefined);
          assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('any body at all on POST /v1/events: 200, 207 or 400, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyJson.map(toJsonText), fc.string(), fc.string({ unit: 'binary' })), async (text) => {
        const res = await postEvents(t.app, tenant.ingestKey, text);
        assert.ok([200, 207, 400].includes(res.statusCode), `${res.statusCode} ${res.body.slice(0, 300)}`);
        assert.equal(typeof res.json().code === 'string' || Array.isArray(res.json().results), true);
      }),
      { numRuns: RUNS },
    );
  });

  for (const [url, base] of [
    ['/v1/events/sessions', () => ({ session_id: uuidv7(), actor_id: 'a', product: 'app', product_version: '1', started_at: '2026-01-01T00:00:00Z' })],
    [
      '/v1/events/sessions/end',
      () => ({
        session_id: uuidv7(),
        ended_at: '2026-01-01T00:00:00Z',
        end_reason: 'sdk_recovery',
        actor_id: 'a',
        product: 'app',
        product_version: '1',
        started_at: '2025-12-31T00:00:00Z',
      }),
    ],
    [
      '/v1/events/exceptions',
      () => ({
        exception_id: uuidv7(),
        exception_type: 'E',
        severity: 'fatal',
        occurred_at: '2026-01-01T00:00:00Z',
        actor_id: 'a',
        product: 'app',
        product_version: '1',
      }),
    ],
    [
      '/v1/actors/identify',
      () => ({ anonymous_actor_id: uuidv7(), identified_actor_id: 'u', identified_at: '2026-01-01T00:00:00Z', product: 'app', product_version: null }),
    ],
  ] as const) {
    it(`${url}: a mutated record is answered 200, 404, 409 or 422 with problem+json, never a 500`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...Object.keys(base()), 'extra', 'none'), anyJson, fc.boolean(), async (field, value, proto) => {
          let record: Record<string, unknown> = base();
          if (field !== 'none') record[field] = value;
          if (proto) record = withProto(record);
          const res = await t.app.inject({
            method: 'POST',
            url,
            headers: { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json' },
            payload: toJsonText(record),
          });
          assert.ok([200, 404, 409, 422].includes(res.statusCode), `${res.statusCode} ${res.body.slice(0, 300)}`);
          if (res.statusCode !== 200) assert.equal(typeof res.json().code, 'string');
          assert.equal(({} as Record<string, unknown>).polluted, undefined);
        }),
        { numRuns: RUNS },
      );
    });
  }
});
