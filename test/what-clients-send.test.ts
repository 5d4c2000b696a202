// What the vendors' real clients send (issue 12, items 7–10), over app.inject against a real store
// (PGlite, or PostgreSQL at TEST_DATABASE_URL): lone surrogates in dead letters and breadcrumbs,
// the client library's own frames in fingerprints, secrets in traces and breadcrumbs. Nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { v7 as uuidv7 } from 'uuid';
import { fingerprint, topFrames } from '../src/domain/fingerprint.js';
import { FILTERED, scrubText } from '../src/domain/scrub.js';
import { event, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

function exception(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    exception_id: uuidv7(),
    exception_type: 'TypeError',
    severity: 'fatal',
    occurred_at: '2026-01-02T03:04:05.678Z',
    actor_id: 'actor-1',
    product: 'app',
    product_version: '1.0.0',
    message: 'boom',
    ...overrides,
  };
}

const sendException = (key: string, body: object) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/events/exceptions',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

/** The body as a strict parser sees it: UTF-8 that decodes, JSON that parses, no lone surrogate escaped in it. */
function strictJson(raw: Buffer): unknown {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  assert.doesNotMatch(text, /\\ud[89a-f][0-9a-f]{2}/i, 'a lone surrogate escape in the body');
  return JSON.parse(text);
}

describe('item 7: every response is valid UTF-8 JSON', () => {
  it('a dead letter holding a lone surrogate comes back with U+FFFD in its place', async () => {
    const tenant = await tenantWithProduct(t.app);
    const bad = event({ name: 'a\ud83d' }); // the JS client's substring(0, 256) through an emoji
    const res = await postEvents(t.app, tenant.ingestKey, [bad, event()]);
    assert.equal(res.statusCode, 207);
    const page = await t.app.inject({ method: 'GET', url: '/v1/invalid-events', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.equal(page.statusCode, 200);
    const body = strictJson(page.rawPayload) as { data: { payload: { name: string } }[] };
    assert.equal(body.data[0]!.payload.name, 'a\ufffd');
  });
});

describe('item 8: a lone surrogate in a breadcrumb keeps the crash', () => {
  it('is stored with U+FFFD, in values and keys; the exception is accepted', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = exception({ breadcrumbs: [{ category: 'ui', message: 'tapped 😀'.slice(0, 8) }, { data: { ['k\udc00']: 'v' } }] });
    const res = await sendException(tenant.ingestKey, e);
    assert.equal(res.statusCode, 200, res.body);
    const [row] = await t.db.query<{ breadcrumbs: unknown }>('SELECT breadcrumbs FROM exceptions WHERE tenant_id = $1', [tenant.id]);
    assert.deepEqual(row!.breadcrumbs, [{ category: 'ui', message: 'tapped \ufffd' }, { data: { 'k\ufffd': 'v' } }]);
  });

  it('a lone surrogate elsewhere in the exception, or a NUL in a breadcrumb, is still refused with 422', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const e of [exception({ exception_type: 'Type\ud800' }), exception({ breadcrumbs: ['a\u0000b'] })]) {
      const res = await sendException(tenant.ingestKey, e);
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().code, 'validation_error');
    }
  });
});

describe("item 9: client libraries' own frames are not application frames", () => {
  const app = [
    './orderd(_ZN6orders12OrderService6submitERKNS_5OrderE+0x1c4) [0x55d4c3a2b1c9]',
    './orderd(_ZN6orders8Checkout3runEv+0x88) [0x55d4c3a2b2aa]',
    './orderd(main+0x42) [0x55d4c3a2a042]',
  ];
  const beacon = (build: string) => [
    `/opt/app/lib/libbeacon_sdk.so.${build}(_ZN6beacon7Tracker20track_exception_implERKSt9exceptionNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEENS_17ExceptionSeverityE+0x5c) [0x7f11a0c0${build}1]`,
    `/opt/app/lib/libbeacon_sdk.so.${build}(_ZN6beacon7Tracker14trackExceptionERKSt9exceptionNS_17ExceptionSeverityE+0x1f) [0x7f11a0c0${build}2]`,
  ];

  it("the C++ client's leading frames are dropped: an SDK upgrade keeps the fingerprint", () => {
    const plain = fingerprint({ exceptionType: 'std::runtime_error', stackTrace: app.join('\n') });
    const v1 = fingerprint({ exceptionType: 'std::runtime_error', stackTrace: [...beacon('1'), ...app].join('\n') });
    const v2 = fingerprint({ exceptionType: 'std::runtime_error', stackTrace: [...beacon('2'), ...app].join('\n') });
    assert.equal(v1, plain);
    assert.equal(v2, plain);
    assert.deepEqual(topFrames([...beacon('1'), ...app].join('\n')), [
      'orders::OrderService::submit (orderd)',
      'orders::Checkout::run (orderd)',
      'main (orderd)',
    ]);
  });

  it('JavaScript and .NET client frames count as library code, like node_modules', () => {
    const js = (client: string) => `Error: x\n    at captureException (${client}:1:200)\n    at pay (https://shop.example/assets/pay.js:10:3)`;
    const plain = topFrames('Error: x\n    at pay (https://shop.example/assets/pay.js:10:3)');
    assert.deepEqual(topFrames(js('https://shop.example/assets/beacon.min.js')), plain);
    assert.deepEqual(topFrames(js('https://cdn.example/@tally/client/dist/browser.js')), plain);
    const net = 'at Beacon.Sdk.Tracker.TrackException(Exception ex)\nat Shop.Orders.Submit(Order o) in C:\\src\\Orders.cs:line 42';
    assert.deepEqual(topFrames(net), ['Shop.Orders.Submit']);
  });
});

describe('item 10: query strings and secrets are scrubbed before storing', () => {
  it('scrubs URLs, bearer tokens, API keys, JWTs and key=value secrets; keeps line and column', () => {
    assert.equal(scrubText('at pay (https://shop.example/pay.js?token=s3cr3t&v=2:10:5)'), `at pay (https://shop.example/pay.js?${FILTERED}:10:5)`);
    assert.equal(scrubText('GET https://api.example/x?api_key=abc failed'), `GET https://api.example/x?${FILTERED} failed`);
    assert.equal(scrubText('Authorization: Bearer abcdefghijklmnop'), `Authorization: Bearer ${FILTERED}`);
    assert.equal(scrubText('key tk_live_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHI in use'), `key ${FILTERED} in use`);
    assert.equal(scrubText('jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'), `jwt ${FILTERED}`);
    assert.equal(scrubText('db_password=hunter2 host=db'), `db_password=${FILTERED} host=db`);
    assert.equal(scrubText('https://admin:pw@db.example/x'), `https://${FILTERED}@db.example/x`);
    assert.equal(scrubText('at Object.<anonymous> (/srv/app/index.js:3:9)'), 'at Object.<anonymous> (/srv/app/index.js:3:9)');
  });

  it('a stored exception and GET /v1/exceptions carry no secret; the fingerprint is that of the clean trace', async () => {
    const tenant = await tenantWithProduct(t.app);
    const key = 'tk_live_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHI';
    const trace = `TypeError: x\n    at pay (https://shop.example/pay.js?key=${key}:10:5)\n    at run (https://shop.example/main.js:3:1)`;
    const clean = `TypeError: x\n    at pay (https://shop.example/pay.js:10:5)\n    at run (https://shop.example/main.js:3:1)`;
    const e = exception({
      message: `request to https://api.example/v1?token=${key} failed`,
      stack_trace: trace,
      breadcrumbs: [
        { category: 'navigation', data: { from: `https://shop.example/login?password=hunter2`, to: '/cart' } },
        { category: 'http', data: { authorization: 'Bearer abcdefghijklmnop', status: 401 } },
      ],
      environment_context: { url: 'https://shop.example/cart?session=abc', os: 'linux' },
    });
    const res = await sendException(tenant.ingestKey, e);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().fingerprint, fingerprint({ exceptionType: 'TypeError', stackTrace: clean }));
    const list = await get(t.app, tenant.adminKey, '/v1/exceptions');
    assert.equal(list.statusCode, 200);
    for (const secret of [key, 'hunter2', 'abcdefghijklmnop', 'session=abc']) assert.ok(!list.body.includes(secret), `${secret} came back`);
    const [row] = await t.db.query<Record<string, unknown>>(
      'SELECT message, stack_trace, breadcrumbs, environment_context FROM exceptions WHERE tenant_id = $1',
      [tenant.id],
    );
    const stored = JSON.stringify(row);
    for (const secret of [key, 'hunter2', 'abcdefghijklmnop', 'session=abc']) assert.ok(!stored.includes(secret), `${secret} was stored`);
    assert.deepEqual((row!.breadcrumbs as { data: unknown }[])[1]!.data, { authorization: FILTERED, status: 401 });
  });

  it('the scrubber stays linear on hostile text (a bound, not a benchmark)', () => {
    for (const hostile of ['a-'.repeat(16_384), 'a://'.repeat(8_192), 'eyJ-'.repeat(8_192), 'token='.repeat(5_000), `${'Bearer '.repeat(4_000)}`]) {
      const started = performance.now();
      scrubText(hostile);
      assert.ok(performance.now() - started < 1_000, `${hostile.slice(0, 8)}…: ${(performance.now() - started).toFixed(0)} ms`);
    }
  });
});
