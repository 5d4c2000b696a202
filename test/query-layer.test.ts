// The query layer: strict cursors and unknown parameters over app.inject against a real store; the range resolver as a pure function with a fixed clock.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../src/errors.js';
import { resolveRange } from '../src/query/scope.js';
import { monthTerms } from '../src/query/reports/month-terms.js';
import { encodeCursor } from '../src/storage/rows.js';
import { get, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

function assertBad(res: { statusCode: number; json(): { code: string; errors?: { field: string }[] } }, field: string): void {
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().code, 'validation_error');
  assert.equal(res.json().errors?.[0]?.field, field);
}

describe('query layer', () => {
  it('a tampered, truncated or foreign cursor is a 400 naming cursor, never a 500', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const bad = [
      encodeCursor([1]),
      encodeCursor(['a', 'b']),
      encodeCursor([]),
      encodeCursor(['\ud800']),
      encodeCursor(['a\u0000']),
      'not base64 at all!',
      Buffer.from('{"a":1}').toString('base64url'),
    ];
    for (const cursor of bad) {
      assertBad(await get(t.app, tenant.adminKey, `/v1/accounts?cursor=${encodeURIComponent(cursor)}`), 'cursor');
      assertBad(await get(t.app, tenant.adminKey, `/v1/licenses?cursor=${encodeURIComponent(cursor)}`), 'cursor');
    }
    // The exception list's key is (last_seen, fingerprint): a one-element or undated key is not one of its cursors.
    for (const cursor of [encodeCursor(['acme']), encodeCursor(['yesterday', 'fp']), encodeCursor(['2026-01-01T00:00:00Z', 7])]) {
      assertBad(await get(t.app, tenant.adminKey, `/v1/exceptions?cursor=${encodeURIComponent(cursor)}`), 'cursor');
    }
    assert.equal((await get(t.app, tenant.adminKey, `/v1/exceptions?cursor=${encodeCursor(['2026-01-01T00:00:00.000Z', 'fp'])}`)).statusCode, 200);
  });

  it('an unknown query parameter is a 400 naming it', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    assertBad(await get(t.app, tenant.adminKey, '/v1/accounts?limit=5&colour=red'), 'colour');
    assertBad(await get(t.app, tenant.adminKey, '/v1/exceptions?produkt=app'), 'produkt');
    assertBad(await get(t.app, tenant.adminKey, '/v1/exceptions?product='), 'product');
    assertBad(await get(t.app, tenant.adminKey, '/v1/exceptions?version='), 'version');
    assertBad(await get(t.app, tenant.adminKey, '/v1/accounts/coverage?x=1'), 'x');
    assert.equal((await get(t.app, tenant.adminKey, '/v1/exceptions?product=app&limit=5')).statusCode, 200);
  });

  it("walks local days by date, not by ISO text, which sorts '+010000-01-01' before '9999-12-31'", () => {
    // Compared as text, the walk over the days of a range ending on 9999-12-31 ran on to the end of
    // JavaScript's dates (minutes, the event loop held: trends answered 500 after eight), then threw.
    const terms = monthTerms('UTC', { y: 9999, m: 12, d: 30 }, { y: 9999, m: 12, d: 31 });
    assert.deepEqual(
      terms?.map((t) => [t.month, t.days, t.shift]),
      [['9999-12-01', 2 ** 29 + 2 ** 30, -29]],
    );
  });

  it('a range past 8999 is a 400 naming the field: what a query reaches past it (a next local day, retention periods) would be past 9999', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const read = (method: 'GET' | 'POST', url: string, body?: object) =>
      t.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${tenant.adminKey}`, ...(body && { 'content-type': 'application/json' }) },
        ...(body && { payload: JSON.stringify(body) }),
      });
    const late = { from: '9999-12-01', to: '9999-12-31T12:00:00Z', tz: 'America/New_York' };
    const ok = { from: '8999-12-01', to: '8999-12-31T12:00:00Z', tz: 'America/New_York' };
    for (const report of ['reports/active-actors', 'reports/versions?product=app', 'environment/os']) {
      const url = (r: Record<string, string>) => `/v1/${report}${report.includes('?') ? '&' : '?'}${new URLSearchParams(r)}`;
      assertBad(await read('GET', url(late)), 'to');
      assert.equal((await read('GET', url(ok))).statusCode, 200, report);
    }
    assertBad(await read('POST', '/v1/retention', { to: '9999-12-31T23:59:59.999Z' }), 'to');
    assert.equal((await read('POST', '/v1/retention', { to: '8999-12-31T23:59:59.999Z', period: 'month', periods: 90 })).statusCode, 200);
    assertBad(await read('GET', '/v1/reports/trends?from=9000-01-01'), 'from');
  });

  it('resolves ranges in a time zone: Nd are local days ending today, bare dates are local midnight', () => {
    const now = new Date('2026-03-10T01:30:00Z'); // 02:30 on 10 March in Berlin (UTC+1), 21:30 on 9 March in New York (UTC-4)
    assert.deepEqual(
      [resolveRange({ range: '7d', tz: 'Europe/Berlin' }, now)].map((r) => [r.from.toISOString(), r.to.toISOString(), r.tz, r.interval]),
      [['2026-03-03T23:00:00.000Z', '2026-03-10T01:30:00.000Z', 'Europe/Berlin', 'day']],
    );
    // New York moved to summer time on 8 March: 3 March starts at 05:00Z.
    assert.equal(resolveRange({ range: '7d', tz: 'America/New_York' }, now).from.toISOString(), '2026-03-03T05:00:00.000Z');
    assert.equal(resolveRange({ range: 'month', tz: 'UTC' }, now).from.toISOString(), '2026-03-01T00:00:00.000Z');
    assert.equal(resolveRange({}, now).from.toISOString(), '2026-02-09T00:00:00.000Z', 'default 30d in UTC');
    const r = resolveRange({ from: '2026-01-01', to: '2026-01-02', tz: 'Asia/Tokyo', interval: 'hour' }, now);
    assert.deepEqual([r.from.toISOString(), r.to.toISOString(), r.interval], ['2025-12-31T15:00:00.000Z', '2026-01-01T15:00:00.000Z', 'hour']);
    // A date-time without an offset is wall time in tz, whatever the host's zone; one with an offset is that instant.
    const wall = resolveRange({ from: '2026-11-01T09:30', to: '2026-11-02T00:00:00.250', tz: 'Asia/Kolkata' }, now);
    assert.deepEqual([wall.from.toISOString(), wall.to.toISOString()], ['2026-11-01T04:00:00.000Z', '2026-11-01T18:30:00.250Z']);
    const given = resolveRange({ from: '2026-11-01T09:30+02:00', to: '2026-11-02T00:00:00Z', tz: 'Asia/Kolkata' }, now);
    assert.deepEqual([given.from.toISOString(), given.to.toISOString()], ['2026-11-01T07:30:00.000Z', '2026-11-02T00:00:00.000Z']);
    const field = (p: Parameters<typeof resolveRange>[0]) => {
      try {
        resolveRange(p, now);
        return 'accepted';
      } catch (err) {
        return err instanceof AppError ? err.errors?.[0]?.field : String(err);
      }
    };
    assert.equal(field({ tz: 'Mars/Olympus' }), 'tz');
    assert.equal(field({ range: '7d', from: '2026-01-01' }), 'range');
    assert.equal(field({ range: '0d' }), 'range');
    assert.equal(field({ range: '9999d' }), 'range');
    assert.equal(field({ from: '2026-02-30T25:00:00Z' }), 'from');
    assert.equal(field({ from: '2026-02-01T24:00' }), 'from');
    assert.equal(field({ from: '2026-02-01T10:60' }), 'from');
    assert.equal(field({ from: '2026-01-02', to: '2026-01-01' }), 'from');
    assert.equal(field({ interval: 'fortnight' }), 'interval');
  });
});
