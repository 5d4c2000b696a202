// POST /v1/events/exceptions over app.inject against a real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { v7 as uuidv7 } from 'uuid';
import { get, post, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const TRACE = `TypeError: Cannot read properties of undefined (reading 'sku')
    at priceLine (file:///srv/shop/dist/cart/pricing.js:42:31)
    at computeTotals (file:///srv/shop/dist/cart/pricing.js:18:22)
    at CartService.checkout (file:///srv/shop/dist/cart/service.js:77:19)`;

function exception(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    exception_id: uuidv7(),
    exception_type: 'TypeError',
    severity: 'non_fatal',
    occurred_at: '2026-01-02T03:04:05.678Z',
    actor_id: 'actor-1',
    product: 'app',
    product_version: '1.0.0',
    message: "Cannot read properties of undefined (reading 'sku')",
    stack_trace: TRACE,
    ...overrides,
  };
}

function send(key: string | undefined, body: unknown) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/events/exceptions',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function rows(tenantId: string): Promise<Record<string, unknown>[]> {
  return t.db.query<Record<string, unknown>>(
    `SELECT exception_id, product_id, product_version, exception_type, severity, occurred_at, received_at, actor_id, message, stack_trace,
            breadcrumbs, session_id, account_id, license_id, environment_context, fingerprint
       FROM exceptions WHERE tenant_id = $1 ORDER BY received_at, exception_id`,
    [tenantId],
  );
}
async function one(tenantId: string, exceptionId: string): Promise<Record<string, unknown> | undefined> {
  return (await rows(tenantId)).find((r) => r.exception_id === exceptionId);
}

function assertProblem(
  res: { statusCode: number; body: string; headers: Record<string, unknown>; json(): { code: string } },
  status: number,
  code?: string,
): void {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  if (code) assert.equal(res.json().code, code);
}

/** n levels of nesting as JSON text, [[[…]]] or {"a":{"a":…}}: built as text, since JSON.stringify itself overflows at 10,000. */
function nestedJson(levels: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(levels) + '"leaf"' + ']'.repeat(levels) : '{"a":'.repeat(levels) + '"leaf"' + '}'.repeat(levels);
}

/** The exception as JSON text with `field` set to the given raw JSON text. */
function withRawField(field: string, json: string): string {
  return JSON.stringify(exception({ [field]: '@RAW@' })).replace('"@RAW@"', json);
}

const codePoints = (s: string) => [...s].length;

describe('POST /v1/events/exceptions', () => {
  it('stores every field and answers 200 {exception_id, status: accepted, fingerprint}', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const e = exception({
      severity: 'fatal',
      session_id: sessionId,
      account_id: 'acme',
      license_id: 'LIC-1',
      breadcrumbs: [
        { at: '2026-01-02T03:04:00Z', category: 'nav', message: '/cart' },
        { category: 'click', data: { id: 'pay' } },
      ],
      environment_context: { os: 'Windows 11', runtime: '.NET 8.0.1', locale: 'de-DE', screen: { w: 1920, h: 1080 } },
    });
    const res = await send(tenant.ingestKey, e);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['exception_id', 'fingerprint', 'status']);
    assert.equal(body.exception_id, e.exception_id);
    assert.equal(body.status, 'accepted');
    assert.match(body.fingerprint, /^[0-9a-f]{32}$/);

    const row = await one(tenant.id, e.exception_id as string);
    assert.ok(row);
    assert.ok(row.received_at instanceof Date);
    const { received_at: _r, occurred_at, ...rest } = row;
    assert.equal(new Date(occurred_at as Date).toISOString(), e.occurred_at);
    assert.deepEqual(rest, {
      exception_id: e.exception_id,
      product_id: tenant.productId,
      product_version: '1.0.0',
      exception_type: 'TypeError',
      severity: 'fatal',
      actor_id: 'actor-1',
      message: e.message,
      stack_trace: TRACE,
      breadcrumbs: e.breadcrumbs,
      session_id: sessionId,
      account_id: 'acme',
      license_id: 'LIC-1',
      environment_context: e.environment_context,
      fingerprint: body.fingerprint,
    });
  });

  it('stores the optional fields as null when they are absent', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { message: _m, stack_trace: _s, ...minimal } = exception();
    assert.equal((await send(tenant.ingestKey, minimal)).statusCode, 200);
    const row = await one(tenant.id, minimal.exception_id as string);
    for (const f of ['message', 'stack_trace', 'breadcrumbs', 'session_id', 'account_id', 'license_id', 'environment_context']) assert.equal(row![f], null, f);
  });

  it('the same exception_id again answers 200 with the same fingerprint and is stored once (the first kept)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const e = exception();
    const first = await send(tenant.ingestKey, e);
    const second = await send(tenant.ingestKey, e);
    assert.equal(second.statusCode, 200, second.body);
    assert.deepEqual(second.json(), first.json());
    const changed = await send(tenant.ingestKey, { ...e, exception_type: 'RangeError', message: 'something else' });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.equal(changed.json().fingerprint, first.json().fingerprint);
    const stored = await rows(tenant.id);
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.exception_type, 'TypeError');
  });

  it('reads the legacy source_app / source_version names', async () => {
    const tenant = await tenantWithProduct(t.app);
    const { product: _p, product_version: _v, ...rest } = exception();
    const res = await send(tenant.ingestKey, { ...rest, source_app: 'app', source_version: '0.9.1' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await one(tenant.id, rest.exception_id as string))!.product_version, '0.9.1');
  });

  it('answers 401 without an API key and stores nothing', async () => {
    const tenant = await tenantWithProduct(t.app);
    assertProblem(await send(undefined, exception()), 401, 'unauthorized');
    assert.equal((await rows(tenant.id)).length, 0);
  });
});

describe('exception truncation (BAD-INPUTS 23)', () => {
  it('BAD-INPUTS 23: a message over 1,000 chars is truncated to 1,000 code points, never rejected, never inside a surrogate pair', async () => {
    const tenant = await tenantWithProduct(t.app);
    const cases: [string, string][] = [
      ['a'.repeat(999) + '😀'.repeat(50), 'a'.repeat(999) + '😀'],
      ['a'.repeat(1000) + '😀'.repeat(50), 'a'.repeat(1000)],
      ['😀'.repeat(1500), '😀'.repeat(1000)],
      ['é'.repeat(1001), 'é'.repeat(1000)],
    ];
    for (const [message, expected] of cases) {
      const e = exception({ message });
      const res = await send(tenant.ingestKey, e);
      assert.equal(res.statusCode, 200, res.body);
      const stored = (await one(tenant.id, e.exception_id as string))!.message as string;
      assert.equal(codePoints(stored), 1000);
      assert.ok(stored.isWellFormed(), 'no lone surrogate');
      assert.equal(stored, expected);
    }
  });

  it('BAD-INPUTS 23: a message of exactly 1,000 chars is kept whole', async () => {
    const tenant = await tenantWithProduct(t.app);
    const message = 'a'.repeat(998) + '😀😀';
    const e = exception({ message });
    assert.equal((await send(tenant.ingestKey, e)).statusCode, 200);
    assert.equal((await one(tenant.id, e.exception_id as string))!.message, message);
  });

  it('BAD-INPUTS 23: a stack_trace over 32,768 chars is truncated to 32,768 code points, never rejected, never inside a surrogate pair', async () => {
    const tenant = await tenantWithProduct(t.app);
    const cases: [string, string][] = [
      ['a'.repeat(32_767) + '😀'.repeat(100), 'a'.repeat(32_767) + '😀'],
      ['😀'.repeat(40_000), '😀'.repeat(32_768)],
      [TRACE + '\n' + '    at x (y.js:1:1)\n'.repeat(5000), (TRACE + '\n' + '    at x (y.js:1:1)\n'.repeat(5000)).slice(0, 32_768)],
    ];
    for (const [stack_trace, expected] of cases) {
      const e = exception({ stack_trace });
      const res = await send(tenant.ingestKey, e);
      assert.equal(res.statusCode, 200, res.body);
      const stored = (await one(tenant.id, e.exception_id as string))!.stack_trace as string;
      assert.equal(codePoints(stored), 32_768);
      assert.ok(stored.isWellFormed(), 'no lone surrogate');
      assert.equal(stored, expected);
    }
    const whole = exception({ stack_trace: 'b'.repeat(32_768) });
    assert.equal((await send(tenant.ingestKey, whole)).statusCode, 200);
    assert.equal(((await one(tenant.id, whole.exception_id as string))!.stack_trace as string).length, 32_768);
  });
});

describe('exception validation', () => {
  it('BAD-INPUTS 24: a severity other than fatal / non_fatal answers 422 and records nothing', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const severity of ['error', 'FATAL', 'non-fatal', '', null, 1]) {
      const res = await send(tenant.ingestKey, exception({ severity }));
      assertProblem(res, 422);
      assert.ok(
        res.json().errors.some((e: { field: string }) => e.field === 'severity'),
        `severity ${JSON.stringify(severity)}: ${res.body}`,
      );
    }
    const { severity: _s, ...missing } = exception();
    assertProblem(await send(tenant.ingestKey, missing), 422);
    assert.equal((await rows(tenant.id)).length, 0);
  });

  it('BAD-INPUTS 21: an invalid session_id answers 200 and the link is dropped', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const sessionId of ['not-a-uuid', 42, { id: 'x' }, '']) {
      const e = exception({ session_id: sessionId });
      const res = await send(tenant.ingestKey, e);
      assert.equal(res.statusCode, 200, `${JSON.stringify(sessionId)}: ${res.body}`);
      assert.equal((await one(tenant.id, e.exception_id as string))!.session_id, null);
    }
  });

  it('BAD-INPUTS 21: an unknown (well-formed) session_id answers 200 and is kept, so the session links up when it arrives', async () => {
    const tenant = await tenantWithProduct(t.app);
    const sessionId = uuidv7();
    const e = exception({ session_id: sessionId });
    assert.equal((await send(tenant.ingestKey, e)).statusCode, 200);
    assert.equal((await one(tenant.id, e.exception_id as string))!.session_id, sessionId);
  });

  it('accepts breadcrumbs of any non-null JSON shape and stores them as sent', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const breadcrumbs of [
      [
        { category: 'nav', message: '/home' },
        { category: 'http', data: { status: 500 } },
      ],
      'clicked pay, then back',
      42,
      true,
      [],
    ]) {
      const e = exception({ breadcrumbs });
      const res = await send(tenant.ingestKey, e);
      assert.equal(res.statusCode, 200, `${JSON.stringify(breadcrumbs)}: ${res.body}`);
      assert.deepEqual((await one(tenant.id, e.exception_id as string))!.breadcrumbs, breadcrumbs);
    }
  });

  it('BAD-INPUTS 8: breadcrumbs or environment_context nested 10,000 levels answer 422, never a 500', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const field of ['breadcrumbs', 'environment_context']) {
      for (const kind of ['array', 'object'] as const) {
        const res = await send(tenant.ingestKey, withRawField(field, nestedJson(10_000, kind)));
        assertProblem(res, 422);
      }
    }
    assert.equal((await rows(tenant.id)).length, 0);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/invalid-events?kind=exception')).json().data.length, 4, 'each kept as a dead letter');
    const shallow = withRawField('breadcrumbs', nestedJson(20, 'array'));
    assert.equal((await send(tenant.ingestKey, shallow)).statusCode, 200, 'reasonable nesting passes');
  });

  it('CONTRACT nesting: breadcrumbs and environment_context 32 levels deep are accepted and stored; 33 levels answer 422', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const field of ['breadcrumbs', 'environment_context']) {
      for (const kind of ['array', 'object'] as const) {
        const at = (levels: number) => exception({ [field]: JSON.parse(nestedJson(levels, kind)) });
        const edge = at(32);
        const res = await send(tenant.ingestKey, edge);
        assert.equal(res.statusCode, 200, `${field} ${kind} at 32 levels: ${res.body}`);
        assert.deepEqual((await one(tenant.id, edge.exception_id as string))![field], edge[field]);
        assertProblem(await send(tenant.ingestKey, at(33)), 422, 'validation_error');
      }
    }
  });

  it('BAD-INPUTS 10: \\u0000 in exception_type answers 422, never a 500', async () => {
    const tenant = await tenantWithProduct(t.app);
    const res = await send(tenant.ingestKey, exception({ exception_type: 'Type\u0000Error' }));
    assertProblem(res, 422);
    assert.ok(
      res.json().errors.some((e: { field: string }) => e.field === 'exception_type'),
      res.body,
    );
    assert.equal((await rows(tenant.id)).length, 0);
  });

  it('BAD-INPUTS 9: 1e400 in breadcrumbs or environment_context answers 422 naming it, never stored as null; 2^63 there is kept as its double', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const [field, json, named] of [
      ['environment_context', '{"os": "linux", "n": 1e400}', 'environment_context.n'],
      ['breadcrumbs', '[{"message": "m", "data": {"n": -1e400}}]', 'breadcrumbs[0].data.n'],
      ['breadcrumbs', '[1e400]', 'breadcrumbs[0]'],
    ] as const) {
      const res = await send(tenant.ingestKey, withRawField(field, json));
      assertProblem(res, 422);
      assert.equal(res.json().errors[0].field, named, res.body);
    }
    assert.equal((await rows(tenant.id)).length, 0);
    const big = await send(tenant.ingestKey, withRawField('breadcrumbs', '[{"message": "m", "data": {"id": 9223372036854775808}}]'));
    assert.equal(big.statusCode, 200, 'the crash is kept: a breadcrumb is free-form context, not a property');
    assert.deepEqual((await rows(tenant.id))[0]!.breadcrumbs, [{ message: 'm', data: { id: 2 ** 63 } }]);
  });

  it('strict mode on: an unregistered version answers 422 UNREGISTERED_VERSION and the exception is not recorded', async () => {
    const tenant = await tenantWithProduct(t.app);
    const patch = await t.app.inject({
      method: 'PATCH',
      url: '/v1/products/app',
      headers: { authorization: `Bearer ${tenant.adminKey}` },
      payload: { strict_versions_enabled: true },
    });
    assert.equal(patch.statusCode, 200);
    assertProblem(await send(tenant.ingestKey, exception({ product_version: '9.9.9' })), 422, 'UNREGISTERED_VERSION');
    assert.equal((await rows(tenant.id)).length, 0);
  });

  it('BAD-INPUTS 18: an invalid account_id or license_id answers 422 invalid_account_id / invalid_license_id', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const bad of ['', '   ', 'a'.repeat(257), 'acme\tcorp', 'acme\u0007']) {
      assertProblem(await send(tenant.ingestKey, exception({ account_id: bad })), 422, 'invalid_account_id');
      assertProblem(await send(tenant.ingestKey, exception({ license_id: bad })), 422, 'invalid_license_id');
    }
    assert.equal((await rows(tenant.id)).length, 0);
  });

  it('every 422 is kept as a dead letter with kind exception', async () => {
    const tenant = await tenantWithProduct(t.app);
    const bad = exception({ severity: 'catastrophic' });
    await send(tenant.ingestKey, bad);
    await send(tenant.ingestKey, exception({ account_id: '' }));
    const { data } = (await get(t.app, tenant.adminKey, '/v1/invalid-events?kind=exception')).json();
    assert.equal(data.length, 2);
    assert.ok(data.every((d: { kind: string }) => d.kind === 'exception'));
    assert.equal(data[0].reason, 'invalid_account_id');
    assert.deepEqual(data[1].payload, bad);
    assert.equal(data[1].product, 'app');
  });
});

describe('fingerprint', () => {
  it('the same bug with different line numbers gets the same fingerprint; a different type a different one', async () => {
    const tenant = await tenantWithProduct(t.app);
    const fp = async (overrides: Record<string, unknown>) => {
      const res = await send(tenant.ingestKey, exception(overrides));
      assert.equal(res.statusCode, 200, res.body);
      return res.json().fingerprint as string;
    };
    const a = await fp({});
    const moved = TRACE.replace(':42:31', ':45:12').replace(':18:22', ':19:2').replace(':77:19', ':80:7');
    assert.notEqual(moved, TRACE);
    assert.equal(await fp({ stack_trace: moved }), a);
    assert.notEqual(await fp({ exception_type: 'RangeError' }), a);
  });
});

describe('GET /v1/exceptions', () => {
  it('counts an actor linked by identify once, as the identified actor, in the list, the account filter and the group', async () => {
    const tenant = await tenantWithProduct(t.app);
    // One bug, raised by anon-1 (linked to u1), by u1 itself, and by u2: three actor ids, two actors.
    for (const [actor, at] of [
      ['anon-1', '2026-01-02T03:04:05.000Z'],
      ['u1', '2026-01-02T04:04:05.000Z'],
      ['u2', '2026-01-02T05:04:05.000Z'],
    ] as const) {
      assert.equal((await send(tenant.ingestKey, exception({ actor_id: actor, occurred_at: at, account_id: 'acme' }))).statusCode, 200);
    }
    const link = await post(t.app, tenant.ingestKey, '/v1/actors/identify', {
      anonymous_actor_id: 'anon-1',
      identified_actor_id: 'u1',
      identified_at: '2026-01-02T03:30:00Z',
      product: 'app',
      product_version: '1.0.0',
    });
    assert.equal(link.statusCode, 200, link.body);
    for (const url of ['/v1/exceptions', '/v1/exceptions?account_id=acme']) {
      const list = await get(t.app, tenant.adminKey, url);
      assert.equal(list.statusCode, 200, list.body);
      assert.deepEqual(
        list.json().data.map((g: { count: number; affected_actors: number }) => [g.count, g.affected_actors]),
        [[3, 2]],
        url,
      );
    }
    const fp = (await get(t.app, tenant.adminKey, '/v1/exceptions')).json().data[0].fingerprint;
    const group = await get(t.app, tenant.adminKey, `/v1/exceptions/${fp}?from=2026-01-01&to=2026-01-03`);
    assert.equal(group.statusCode, 200, group.body);
    assert.equal(group.json().total.actors, 2);
  });

  it('pages through groups last seen within the same millisecond (the .NET client sends 7 fractional digits), in order, none twice', async () => {
    const tenant = await tenantWithProduct(t.app);
    const types = ['AError', 'BError', 'CError'];
    for (const [i, type] of types.entries()) {
      const res = await send(tenant.ingestKey, exception({ exception_type: type, occurred_at: `2026-01-02T03:04:47.12345${6 + i}Z` }));
      assert.equal(res.statusCode, 200, res.body);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(t.app, tenant.adminKey, `/v1/exceptions?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as { data: { exception_type: string }[]; next_cursor: string | null };
      seen.push(...body.data.map((g) => g.exception_type));
      cursor = body.next_cursor;
      assert.ok(seen.length <= types.length, `${seen.join(', ')}: more pages than groups`);
    } while (cursor !== null);
    // Newest first: .123458, .123457, .123456; a millisecond cursor (.123) skipped the last two.
    assert.deepEqual(seen, ['CError', 'BError', 'AError']);
  });

  it('as CSV (Accept: text/csv): a page of groups, the next page’s cursor in X-Next-Cursor, none at the end', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const [i, type] of ['AError', 'BError'].entries()) {
      assert.equal((await send(tenant.ingestKey, exception({ exception_type: type, occurred_at: `2026-01-02T03:04:0${i}Z` }))).statusCode, 200);
    }
    const csv = (url: string) => t.app.inject({ url, headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' } });
    const first = await csv('/v1/exceptions?limit=1');
    assert.equal(first.statusCode, 200, first.body);
    assert.match(String(first.headers['content-type']), /^text\/csv/);
    const [header, row, ...rest] = first.body.trimEnd().split('\r\n');
    assert.deepEqual(rest, []);
    const col = (name: string) => header!.split(',').indexOf(name);
    assert.ok(col('fingerprint') >= 0 && col('count') >= 0, header);
    assert.equal(row!.split(',')[col('exception_type')], 'BError', 'newest first');
    const cursor = first.headers['x-next-cursor'];
    assert.ok(typeof cursor === 'string' && cursor.length > 0, 'the next page’s cursor');
    const second = await csv(`/v1/exceptions?limit=1&cursor=${encodeURIComponent(cursor)}`);
    assert.equal(second.body.trimEnd().split('\r\n')[1]!.split(',')[col('exception_type')], 'AError');
    assert.equal(second.headers['x-next-cursor'], undefined, 'none at the end');
  });
});

describe('tenancy', () => {
  it('the same exception_id in two tenants is stored for both', async () => {
    const a = await tenantWithProduct(t.app);
    const b = await tenantWithProduct(t.app);
    const e = exception();
    assert.equal((await send(a.ingestKey, e)).statusCode, 200);
    assert.equal((await send(b.ingestKey, { ...e, actor_id: 'actor-b' })).statusCode, 200);
    assert.equal((await one(a.id, e.exception_id as string))!.actor_id, 'actor-1');
    assert.equal((await one(b.id, e.exception_id as string))!.actor_id, 'actor-b');
    assert.equal((await one(b.id, e.exception_id as string))!.product_id, b.productId);
  });
});
