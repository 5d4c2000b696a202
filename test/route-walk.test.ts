// Walks the OpenAPI document and sends hostile values into every path parameter, query parameter
// and body field of every route, over app.inject against a real store (PGlite, or PostgreSQL when
// TEST_DATABASE_URL is set). Nothing is faked. Every answer must be below 500, every 4xx
// problem+json with a `code`, and every body valid UTF-8 JSON without a lone surrogate.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, event, postEvents, startTestApp, tenantWithProduct, type Tenant, type TestApp } from './helpers/app.js';

type Schema = {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  minimum?: number;
};
type Operation = { parameters?: { in: string; name: string; schema?: Schema }[]; requestBody?: { content: Record<string, { schema: Schema }> } };

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const HOSTILE_STRINGS = ['\u0000', 'a\u0000b', '\ud800', 'a\udc00b', 'x'.repeat(10_240), '', ' ', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00.000Z'];
const HOSTILE_VALUES: unknown[] = [...HOSTILE_STRINGS, 2 ** 63, -1, 1.5, true, null, {}, [], [{}], { __proto__: 1 }];
// Raw text for the URL: percent-encoded NUL, lone surrogates as CESU bytes, invalid UTF-8, long ids.
const HOSTILE_URL_PARTS = ['%00', 'a%00b', '%ED%A0%80', '%C0%AF', '%FF%FE', 'x'.repeat(10_240), '%E2%82', 'latest', '..%2F..%2Fadmin'];
const HOSTILE_CURSORS = [
  b64({ a: 1 }),
  b64(['x']),
  b64([1, 2, 3]),
  b64([]),
  b64(['0000-01-01T00:00:00Z', randomUUID()]),
  b64(['+275760-09-13T00:00:00.000Z', randomUUID()]),
  b64(['2024-02-30T00:00:00Z', 'x']),
  b64([null, null]),
  b64(['\u0000']),
  b64(['\ud800', 5]),
  b64([{}, []]),
  'not*base64',
  '%00',
];
const HOSTILE_DATES = [
  '0000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '-000001-01-01T00:00:00Z',
  '2024-02-30T00:00:00Z',
  '2024-01-01T00:00:00+23:59',
  '10000-01-01T00:00:00Z',
  '2024-01-01',
  '1e400',
];

/** A valid value of a schema, to fill the fields that are not under attack. */
function sample(s: Schema | undefined, name = ''): unknown {
  if (!s) return 'x';
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  if (s.anyOf) return sample(s.anyOf.find((a) => a.type !== 'null') ?? s.anyOf[0], name);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) if (s.required?.includes(k)) out[k] = sample(v, k);
      return out;
    }
    case 'array':
      return s.minItems ? Array.from({ length: s.minItems }, () => sample(s.items, name)) : [];
    case 'integer':
    case 'number':
      return Math.max(1, s.minimum ?? 1);
    case 'boolean':
      return true;
    default:
      if (s.format === 'date-time') return '2026-01-02T03:04:05Z';
      if (s.format === 'date') return '2026-01-02';
      if (s.format === 'uuid') return randomUUID();
      return name === 'slug' ? `walk-${randomUUID().slice(0, 8)}` : 'x';
  }
}

let t: TestApp;
let tenant: Tenant & { productId: string };
let versionId: string;
let doc: { paths: Record<string, Record<string, Operation>> };
const ids: Record<string, string> = {};

before(async () => {
  t = await startTestApp();
  tenant = await tenantWithProduct(t.app, 'business');
  await postEvents(t.app, tenant.ingestKey, [event({ account_id: 'acct-1', license_id: 'lic-1' })]);
  const versions = await t.app.inject({
    method: 'GET',
    url: `/v1/products/${tenant.productId}/versions`,
    headers: { authorization: `Bearer ${tenant.adminKey}` },
  });
  versionId = versions.json().data[0].id;
  const key = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/tenants/${tenant.id}/keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { permissions: ['read'] },
  });
  Object.assign(ids, { productId: tenant.productId, versionId, accountId: 'acct-1', licenseId: 'lic-1', keyId: key.json().id });
  doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
});
after(async () => t.close());

function assertSound(res: LightMyRequestResponse, what: string): void {
  assert.ok(res.statusCode < 500, `${what}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  const text = new TextDecoder('utf-8', { fatal: true }).decode(res.rawPayload);
  if (res.statusCode >= 400) {
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${what}: ${res.statusCode} is not problem+json`);
    assert.equal(typeof JSON.parse(text).code, 'string', `${what}: no code`);
  }
  if (text.length > 0 && String(res.headers['content-type']).includes('json')) {
    // JSON.stringify of a parsed body with a lone surrogate escapes it: `\ud800` shows it was there.
    assert.doesNotMatch(JSON.stringify(JSON.parse(text)), /\\ud[89a-f][0-9a-f]{2}/i, `${what}: a lone surrogate in the body`);
  }
}

function headersFor(path: string, body: boolean): Record<string, string> {
  const auth = path.startsWith('/admin/') ? ADMIN_TOKEN : tenant.adminKey;
  return { authorization: `Bearer ${auth}`, ...(body ? { 'content-type': 'application/json' } : {}) };
}

function fillPath(path: string, override?: [string, string]): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (override && override[0] === name) return override[1];
    if (name === 'id') return path.startsWith('/admin/') ? tenant.id : tenant.productId;
    return encodeURIComponent(ids[name] ?? 'x');
  });
}

function operations(): [string, string, Operation][] {
  const out: [string, string, Operation][] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      // Deleting the product or revoking the key under test would turn the rest into 404s.
      if (method === 'delete') continue;
      out.push([path, method.toUpperCase(), op]);
    }
  }
  return out;
}

describe('every route, every parameter, hostile values', () => {
  it('path parameters: NUL, invalid UTF-8, lone surrogates, 10 KB', async () => {
    for (const [path, method, op] of operations()) {
      const body = op.requestBody ? JSON.stringify(sample(op.requestBody.content['application/json']?.schema)) : undefined;
      for (const p of op.parameters?.filter((x) => x.in === 'path') ?? []) {
        for (const raw of HOSTILE_URL_PARTS) {
          const url = fillPath(path, [p.name, raw]);
          const res = await t.app.inject({
            method: method as 'GET',
            url,
            headers: headersFor(path, body !== undefined),
            ...(body !== undefined ? { payload: body } : {}),
          });
          assertSound(res, `${method} ${path} ${p.name}=${raw.slice(0, 20)}`);
        }
      }
    }
  });

  it('query parameters: hostile strings, dates out of range, tampered cursors, wrong types', async () => {
    for (const [path, method, op] of operations()) {
      for (const p of op.parameters?.filter((x) => x.in === 'query') ?? []) {
        const values = [
          ...HOSTILE_URL_PARTS,
          ...(p.name === 'cursor' ? HOSTILE_CURSORS.map(encodeURIComponent) : []),
          ...HOSTILE_DATES.map(encodeURIComponent),
          '-1',
          '1e400',
          '99999999999999999999',
          '[]',
          '%5B%5D',
        ];
        for (const raw of values) {
          const url = `${fillPath(path)}?${p.name}=${raw}`;
          const res = await t.app.inject({ method: method as 'GET', url, headers: headersFor(path, false) });
          assertSound(res, `${method} ${path}?${p.name}=${raw.slice(0, 30)}`);
        }
        // The same parameter twice (an array where a string is expected).
        const res = await t.app.inject({ method: method as 'GET', url: `${fillPath(path)}?${p.name}=a&${p.name}=b`, headers: headersFor(path, false) });
        assertSound(res, `${method} ${path}?${p.name} twice`);
      }
    }
  });

  it('a query value or name whose percent-encoding is not UTF-8 is a 400 naming the parameter, not a filter of its raw text', async () => {
    const tenant = await tenantWithProduct(t.app);
    for (const [query, field] of [
      ['product=%ff', 'product'],
      ['product=%c3%28', 'product'],
      ['name=abc%', 'name'],
      ['range=7d&name=%e2%82', 'name'],
      ['%ff=1', 'query'],
    ] as const) {
      const url = query.startsWith('product') ? `/v1/invalid-events?${query}` : `/v1/reports/trends?${query}`;
      const res = await t.app.inject({ url, headers: { authorization: `Bearer ${tenant.adminKey}` } });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.deepEqual(res.json().errors, [{ field, message: 'is not valid percent-encoded UTF-8' }], url);
    }
    // Valid encodings pass: a space as + or %20, a 4-byte character.
    const ok = await t.app.inject({ url: '/v1/reports/trends?range=7d&name=a+b%20c%F0%9F%98%80', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  it('body fields: NUL, lone surrogates, 10 KB strings, dates out of range, wrong types, unknown keys', async () => {
    for (const [path, method, op] of operations()) {
      const schema = op.requestBody?.content['application/json']?.schema;
      if (!schema) continue;
      const base = sample(schema);
      if (path === '/v1/events') {
        for (const v of HOSTILE_VALUES) {
          for (const field of ['event_id', 'category', 'name', 'timestamp', 'actor_id', 'product', 'product_version', 'properties', 'account_id']) {
            const res = await postEvents(t.app, tenant.ingestKey, [event({ [field]: v })]);
            assertSound(res, `POST /v1/events ${field}=${JSON.stringify(v).slice(0, 20)}`);
          }
        }
        continue;
      }
      const fields = Object.keys(schema.properties ?? {});
      for (const field of [...fields, 'unknown_field', 'name = (SELECT 1), plan', 'id', 'tenant_id', 'created_at']) {
        const values = [...HOSTILE_VALUES, ...(schema.properties?.[field]?.format?.startsWith('date') ? HOSTILE_DATES : [])];
        for (const v of values) {
          const payload = JSON.stringify({ ...(base as object), [field]: v });
          const res = await t.app.inject({ method: method as 'POST', url: fillPath(path), headers: headersFor(path, true), payload });
          assertSound(res, `${method} ${path} ${field}=${JSON.stringify(v).slice(0, 20)}`);
        }
      }
      for (const whole of ['[]', 'null', '"x"', '{"a":', '{"\\u0000":1}', '{"\\ud800":1}']) {
        const res = await t.app.inject({ method: method as 'POST', url: fillPath(path), headers: headersFor(path, true), payload: whole });
        assertSound(res, `${method} ${path} body ${whole}`);
      }
    }
  });

  it('the walk reached every route of the document', () => {
    assert.ok(operations().length >= 30, `only ${operations().length} operations`);
  });
});
