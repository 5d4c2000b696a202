// The ingestion routes as a browser calls them (preflight, then POST with an Origin), over app.inject
// against a real store. The plans are real configuration with a low rate so that 429 comes quickly.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mergePlans } from '../src/domain/plans.js';
import { event, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp({ plans: mergePlans({ trial: { requests_per_minute: 2 } }) })));
after(async () => t.close());

const INGESTION = ['/v1/events', '/v1/events/sessions', '/v1/events/sessions/end', '/v1/events/exceptions', '/v1/actors/identify'];
const ORIGIN = 'https://app.example.com';

function assertCors(res: { headers: Record<string, unknown> }, what: string) {
  assert.equal(res.headers['access-control-allow-origin'], '*', what);
  assert.match(String(res.headers['access-control-expose-headers']), /Retry-After/i, what);
}

describe('browser clients (CONTRACT.md)', () => {
  it('answers the preflight of every ingestion route with 204 and the allowed methods and headers', async () => {
    for (const url of INGESTION) {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url,
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, x-environment-data',
        },
      });
      assert.equal(res.statusCode, 204, url);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.match(String(res.headers['access-control-allow-methods']), /POST/);
      assert.match(String(res.headers['access-control-allow-methods']), /OPTIONS/);
      const allowed = String(res.headers['access-control-allow-headers']).toLowerCase();
      for (const h of ['authorization', 'content-type', 'x-environment-data']) assert.ok(allowed.includes(h), h);
      assert.ok(Number(res.headers['access-control-max-age']) >= 3600);
    }
  });

  it('carries Allow-Origin and Expose-Headers: Retry-After on 200, 207, 400, 401, 413 and 429', async () => {
    const tenant = await tenantWithProduct(t.app, 'trial');
    const post = (payload: string, key = tenant.ingestKey) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { origin: ORIGIN, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload,
      });

    const ok = await post(JSON.stringify([event()]));
    assert.equal(ok.statusCode, 200);
    assertCors(ok, '200');
    const partial = await post(JSON.stringify([event(), event({ product: 'nope' })]));
    assert.equal(partial.statusCode, 207);
    assertCors(partial, '207');
    const limited = await post(JSON.stringify([event()]));
    assert.equal(limited.statusCode, 429);
    assertCors(limited, '429');
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal(String(limited.headers['retry-after']), String(Math.trunc(Number(limited.headers['retry-after']))));
    assert.equal(limited.json().code, 'rate_limited');
    for (const h of Object.keys(limited.headers)) assert.ok(!/^x-ratelimit/i.test(h), h);

    const unauthorized = await post(JSON.stringify([event()]), 'tk_live_wrong');
    assert.equal(unauthorized.statusCode, 401);
    assertCors(unauthorized, '401');

    // 400 and 413 from a tenant with room left.
    const other = await tenantWithProduct(t.app);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { origin: ORIGIN, authorization: `Bearer ${other.ingestKey}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    assert.equal(bad.statusCode, 400);
    assertCors(bad, '400');
    const big = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { origin: ORIGIN, authorization: `Bearer ${other.ingestKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify(['x'.repeat(1_048_600)]),
    });
    assert.equal(big.statusCode, 413);
    assertCors(big, '413');
  });

  it('rate limits per tenant: another tenant is unaffected, and no response carries X-RateLimit-*', async () => {
    const a = await tenantWithProduct(t.app, 'trial');
    const b = await tenantWithProduct(t.app, 'trial');
    const post = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify([event()]),
      });
    const codes = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(a.ingestKey);
      for (const h of Object.keys(res.headers)) assert.ok(!/^x-ratelimit/i.test(h), h);
      codes.push(res.statusCode);
    }
    assert.deepEqual(codes, [200, 200, 429]);
    assert.equal((await post(b.ingestKey)).statusCode, 200);
  });
});
