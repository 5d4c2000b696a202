// The access log and /metrics' token: the real app and store, the logger writing to an in-memory stream.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { loggerOptions } from '../src/app.js';
import { event, postEvents, startTestApp, tenantWithProduct } from './helpers/app.js';

function memoryLogger(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, logger: { ...(loggerOptions(level) as object), stream } };
}

describe('access log', () => {
  it('one line per request: method, route, status, duration, tenant and request id; never the key', async () => {
    const { lines, logger } = memoryLogger();
    const t = await startTestApp({ logger });
    try {
      const tenant = await tenantWithProduct(t.app, 'business');
      lines.length = 0;
      const ok = await postEvents(t.app, tenant.ingestKey, [event()], { headers: { 'x-request-id': 'proxy-42' } });
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['x-request-id'], 'proxy-42');
      const denied = await t.app.inject({ method: 'GET', url: `/v1/products/app?key=${tenant.adminKey}`, headers: { authorization: 'Bearer tk_live_nope' } });
      assert.equal(denied.statusCode, 401);
      assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      const access = lines.filter((l) => l.msg === 'request');
      assert.equal(access.length, 2, `probes are logged at debug, not info: ${JSON.stringify(lines)}`);
      const [first, second] = access as [Record<string, unknown>, Record<string, unknown>];
      assert.equal(first.level, 30, 'info');
      assert.deepEqual([first.method, first.route, first.status, first.tenant, first.reqId], ['POST', '/v1/events', 200, tenant.id, 'proxy-42']);
      assert.equal(typeof first.ms, 'number');
      assert.deepEqual([second.method, second.route, second.status, second.tenant], ['GET', '/v1/products/:id', 401, undefined]);
      assert.match(String(second.reqId), /^[0-9a-f-]{36}$/, 'a request id of our own when none came');
      const all = JSON.stringify(lines);
      for (const secret of [tenant.ingestKey, tenant.adminKey, 'tk_live_nope']) assert.ok(!all.includes(secret), 'no key in the log');
      assert.ok(!/authorization/i.test(all));
    } finally {
      await t.close();
    }
  });

  it('ACCESS_LOG=false turns it off', async () => {
    const { lines, logger } = memoryLogger();
    const t = await startTestApp({ logger, env: { ACCESS_LOG: 'false' } });
    try {
      assert.equal((await t.app.inject({ method: 'GET', url: '/v1/products' })).statusCode, 401);
      assert.deepEqual(
        lines.filter((l) => l.msg === 'request'),
        [],
      );
    } finally {
      await t.close();
    }
  });
});

describe('/metrics', () => {
  it('with METRICS_TOKEN set needs it as a Bearer token', async () => {
    const t = await startTestApp({ env: { METRICS_TOKEN: 'scrape-secret' } });
    try {
      assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
      assert.equal((await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong-secret' } })).statusCode, 401);
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-secret' } });
      assert.equal(res.statusCode, 200);
      assert.match(res.body, /tally_http_request_duration_seconds/);
    } finally {
      await t.close();
    }
  });

  it('without it, stays open (for a private listen address)', async () => {
    const t = await startTestApp();
    try {
      assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
    } finally {
      await t.close();
    }
  });
});
