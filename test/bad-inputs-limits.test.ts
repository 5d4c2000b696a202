// BAD-INPUTS.md 14–20, both sides of each limit, over app.inject; real app, real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { v4 as uuidv4 } from 'uuid';
import { createProduct, event, postEvents, startTestApp, tenantWithProduct, type Tenant, type TestApp } from './helpers/app.js';
import { assertRejectedAlone, deadLetterReasons, storedIds } from './helpers/verdicts.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

type Element = Record<string, unknown>;

/** One code point each, of 1, 2, 3 and 4 bytes of UTF-8; the emoji is two UTF-16 units. */
const CHARS = ['a', 'é', '中', '😀'] as const;

const idOf = (e: Element) => (e.event_id as string).toLowerCase();

/**
 * Sends the batch, asserts that exactly the `rejected` elements were rejected alone (207), that
 * the store holds exactly the others, and that each rejection left one dead letter.
 */
async function sendAndCheck(tenant: Tenant, elements: Element[], rejected: Record<number, string | readonly string[]>): Promise<void> {
  const res = await postEvents(t.app, tenant.ingestKey, elements);
  assertRejectedAlone(res, elements.length, rejected);
  const accepted = elements
    .filter((_, i) => !(i in rejected))
    .map(idOf)
    .sort();
  assert.deepEqual(await storedIds(t.db, tenant.id), accepted);
  assert.equal((await deadLetterReasons(t.db, tenant.id)).length, Object.keys(rejected).length);
}

/** A stored column of one event, as the store returns it. */
async function stored(tenantId: string, e: Element, column: string): Promise<unknown> {
  const [row] = await t.db.query<{ v: unknown }>(`SELECT ${column} AS v FROM events WHERE tenant_id = $1 AND event_id = $2`, [tenantId, idOf(e)]);
  assert.ok(row, `event ${idOf(e)} is not stored`);
  return row.v;
}

describe('BAD-INPUTS field limits (lines 14–20)', () => {
  const LENGTHS = [
    { field: 'category', max: 128 },
    { field: 'name', max: 256 },
    { field: 'actor_id', max: 512 },
    { field: 'product_version', max: 128 },
  ];
  for (const { field, max } of LENGTHS) {
    it(`BAD-INPUTS 14: ${field} of ${max} code points is accepted, ${max + 1} rejected alone (ASCII, é, 中, emoji)`, async () => {
      const tenant = await tenantWithProduct(t.app);
      const elements: Element[] = [event()];
      const rejected: Record<number, string> = {};
      const atLimit: Element[] = [];
      const values = CHARS.flatMap((c) => [c.repeat(max), c.repeat(max + 1)]);
      // 127 ASCII + 1 emoji is 128 code points but 129 UTF-16 units; one more ASCII is over.
      values.push(`${'a'.repeat(max - 1)}😀`, `${'a'.repeat(max)}😀`);
      values.forEach((v, i) => {
        const e = event({ [field]: v });
        if (i % 2 === 1) rejected[elements.length] = 'invalid_event';
        else atLimit.push(e);
        elements.push(e);
      });
      elements.push(event());
      await sendAndCheck(tenant, elements, rejected);
      for (const e of atLimit) assert.equal(await stored(tenant.id, e, field), e[field]);
    });
  }

  it('BAD-INPUTS 14: product of 256 code points passes the length rule, 257 is rejected alone (ASCII, é, 中, emoji)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const slug = 'p'.repeat(256);
    await createProduct(t.app, tenant.adminKey, slug);
    const registered = event({ product: slug });
    const elements: Element[] = [event(), registered, event({ product: 'p'.repeat(257) })];
    const rejected: Record<number, string> = { 2: 'invalid_event' };
    // Slugs are ASCII, so a 256-char multi-byte product passes the length rule and is then unknown.
    for (const c of CHARS.slice(1)) {
      rejected[elements.length] = 'UNRECOGNIZED_PRODUCT';
      elements.push(event({ product: c.repeat(256) }));
      rejected[elements.length] = 'invalid_event';
      elements.push(event({ product: c.repeat(257) }));
    }
    elements.push(event());
    await sendAndCheck(tenant, elements, rejected);
    const [row] = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events e JOIN products p ON p.id = e.product_id WHERE e.tenant_id = $1 AND p.slug = $2',
      [tenant.id, slug],
    );
    assert.equal(row!.n, 1);
  });

  /**
   * An event whose re-serialised JSON is exactly `bytes` bytes of UTF-8: property values of
   * `fill` (at most 256 chars each), then ASCII in a last property for the remainder.
   */
  function eventOfBytes(bytes: number, fill: string): Element {
    const props: Record<string, string> = { pad: '' };
    const e = event({ properties: props });
    const size = () => Buffer.byteLength(JSON.stringify(e));
    for (let i = 0; ; i++) {
      props[`t${i}`] = fill.repeat(256);
      if (size() <= bytes) continue;
      let v = fill.repeat(256);
      while (size() > bytes && v.length > 0) {
        v = v.slice(0, -fill.length);
        props[`t${i}`] = v;
      }
      break;
    }
    props.pad = 'x'.repeat(bytes - size());
    assert.equal(size(), bytes);
    assert.ok(Object.keys(props).length <= 20);
    return e;
  }

  for (const fill of ['é', '中', '😀', '"']) {
    it(`BAD-INPUTS 15: an element of 4,096 bytes serialised (${fill} text) is accepted; 4,097 bytes is rejected alone`, async () => {
      const tenant = await tenantWithProduct(t.app);
      const exact = eventOfBytes(4096, fill);
      const over = eventOfBytes(4097, fill);
      await sendAndCheck(tenant, [event(), exact, over, event()], { 2: 'event_too_large' });
      assert.deepEqual(await stored(tenant.id, exact, 'properties'), exact.properties);
    });
  }

  it('BAD-INPUTS 15: the 4 KB limit applies to the re-serialised element, not to the whitespace it was sent with', async () => {
    const tenant = await tenantWithProduct(t.app);
    const exact = eventOfBytes(4096, '中');
    const over = eventOfBytes(4097, '中');
    const res = await postEvents(t.app, tenant.ingestKey, JSON.stringify([exact, over], null, 8));
    assertRejectedAlone(res, 2, { 1: 'event_too_large' });
    assert.deepEqual(await storedIds(t.db, tenant.id), [idOf(exact)]);
  });

  it('BAD-INPUTS 16: properties: 20 keys / 21 keys, key 64 / 65, value 256 / 257 code points, nested value', async () => {
    const tenant = await tenantWithProduct(t.app);
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    const cases: [Record<string, unknown>, boolean][] = [
      [keys(20), true],
      [keys(21), false],
    ];
    for (const c of CHARS) {
      cases.push([{ [c.repeat(64)]: 'v' }, true], [{ [c.repeat(65)]: 'v' }, false]);
      cases.push([{ v: c.repeat(256) }, true], [{ v: c.repeat(257) }, false]);
    }
    cases.push([{ v: `${'a'.repeat(255)}😀` }, true], [{ v: `${'a'.repeat(256)}😀` }, false]);
    cases.push([{ ok: 'x', nested: { a: 1 } }, false], [{ nested: {} }, false], [{ list: [1, 2] }, false], [{ list: [] }, false]);
    const elements: Element[] = [event()];
    const rejected: Record<number, string> = {};
    const accepted: Element[] = [];
    for (const [properties, ok] of cases) {
      const e = event({ properties });
      if (ok) accepted.push(e);
      else rejected[elements.length] = 'invalid_event';
      elements.push(e);
    }
    elements.push(event());
    await sendAndCheck(tenant, elements, rejected);
    for (const e of accepted) assert.deepEqual(await stored(tenant.id, e, 'properties'), e.properties);
  });

  it('BAD-INPUTS 17: each of the six reserved property keys is rejected alone (reserved_property_key)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const reserved = ['account_id', 'accountId', 'account', 'license_id', 'licenseId', 'license'];
    const elements: Element[] = [event()];
    const rejected: Record<number, string> = {};
    for (const key of reserved) {
      rejected[elements.length] = 'reserved_property_key';
      elements.push(event({ properties: { plan: 'pro', [key]: 'acme' } }));
      // Also beside a valid top-level account_id and license_id.
      rejected[elements.length] = 'reserved_property_key';
      elements.push(event({ account_id: 'acme', license_id: 'LIC-1', properties: { [key]: 'acme' } }));
    }
    const nearMiss = event({ properties: { account_name: 'Acme', licensed: true } });
    elements.push(nearMiss, event());
    const res = await postEvents(t.app, tenant.ingestKey, elements);
    const results = assertRejectedAlone(res, elements.length, rejected);
    reserved.forEach((key, i) => assert.match(results[1 + 2 * i]!.message!, new RegExp(key)));
    assert.deepEqual(await storedIds(t.db, tenant.id), [elements[0]!, nearMiss, elements[elements.length - 1]!].map(idOf).sort());
  });

  for (const [field, code] of [
    ['account_id', 'invalid_account_id'],
    ['license_id', 'invalid_license_id'],
  ] as const) {
    it(`BAD-INPUTS 18: ${field} "", blank, 257 chars, a tab or \\u0007 is rejected alone (${code}); 1 and 256 chars are stored`, async () => {
      const tenant = await tenantWithProduct(t.app);
      const bad = [
        '',
        ' ',
        '   ',
        '\u00a0\u3000',
        'x'.repeat(257),
        '😀'.repeat(257),
        '\t',
        'acme\tcorp',
        '\u0007',
        'acme\u0007',
        'acme\n',
        'acme\u007f',
        'acme\u0085',
      ];
      const good = ['a', 'x'.repeat(256), '😀'.repeat(256), '中'.repeat(256), 'Acme Corp', 'acme-😀'];
      const elements: Element[] = [event()];
      const rejected: Record<number, string> = {};
      for (const v of bad) {
        rejected[elements.length] = code;
        elements.push(event({ [field]: v }));
      }
      const accepted = good.map((v) => event({ [field]: v }));
      elements.push(...accepted, event());
      await sendAndCheck(tenant, elements, rejected);
      for (const e of accepted) assert.equal(await stored(tenant.id, e, field), e[field]);
    });
  }

  it('BAD-INPUTS 19: an event_id that is not a UUID, or the nil UUID, is rejected alone (invalid_event)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const id = uuidv4();
    const { event_id: _drop, ...missing } = event();
    const bad: Element[] = [
      event({ event_id: 'not-a-uuid' }),
      event({ event_id: '' }),
      event({ event_id: '12345' }),
      event({ event_id: `${id}0` }),
      event({ event_id: id.slice(0, -1) }),
      event({ event_id: `${id.slice(0, -1)}g` }),
      event({ event_id: '00000000-0000-0000-0000-000000000000' }),
      event({ event_id: null }),
      { ...missing, note: 'no event_id' },
    ];
    const v4 = event({ event_id: uuidv4() });
    const upper = event({ event_id: uuidv4().toUpperCase() });
    const elements = [event(), ...bad, v4, upper, event()];
    const rejected = Object.fromEntries(bad.map((_, i) => [i + 1, 'invalid_event']));
    const res = await postEvents(t.app, tenant.ingestKey, elements);
    assertRejectedAlone(res, elements.length, rejected);
    assert.deepEqual(await storedIds(t.db, tenant.id), [elements[0]!, v4, upper, elements[elements.length - 1]!].map(idOf).sort());
    assert.equal((await deadLetterReasons(t.db, tenant.id)).length, bad.length);
  });

  it('BAD-INPUTS 20: a timestamp that is missing, impossible, without offset or an epoch number is rejected alone (invalid_event)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { timestamp: _drop, ...missing } = event();
    const bad: Element[] = [
      missing,
      event({ timestamp: null }),
      event({ timestamp: '2024-02-30T00:00:00Z' }),
      event({ timestamp: '2023-02-29T00:00:00Z' }),
      event({ timestamp: '2024-04-31T00:00:00Z' }),
      event({ timestamp: '2024-01-01T00:00:00' }),
      event({ timestamp: '2024-01-01' }),
      event({ timestamp: 1704067200 }),
      event({ timestamp: 1704067200000 }),
      event({ timestamp: '1704067200' }),
      event({ timestamp: '' }),
    ];
    const good: [Element, string][] = [
      [event({ timestamp: '2024-02-29T00:00:00Z' }), '2024-02-29T00:00:00.000Z'],
      [event({ timestamp: '2024-01-01T00:00:00+02:00' }), '2023-12-31T22:00:00.000Z'],
      [event({ timestamp: '2024-01-01T00:00:00.123-05:30' }), '2024-01-01T05:30:00.123Z'],
    ];
    const elements = [event(), ...bad, ...good.map(([e]) => e), event()];
    const rejected = Object.fromEntries(bad.map((_, i) => [i + 1, 'invalid_event']));
    await sendAndCheck(tenant, elements, rejected);
    for (const [e, instant] of good) {
      const v = await stored(tenant.id, e, 'occurred_at');
      assert.equal(new Date(v as string | Date).toISOString(), instant);
    }
  });
});
