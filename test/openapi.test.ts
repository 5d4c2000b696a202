// The OpenAPI document as a client generator sees it: the real app's /docs/json, turned into
// TypeScript types by openapi-typescript, and a typed call checked by the TypeScript compiler.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

const run = promisify(execFile);
let t: TestApp;
let doc: {
  paths: Record<string, Record<string, { operationId?: string; responses: Record<string, { content?: Record<string, unknown> }> }>>;
  components: { schemas: Record<string, unknown> };
};
before(async () => {
  t = await startTestApp();
  doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
});
after(async () => t.close());

const operations = () => Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));

describe('OpenAPI document', () => {
  it('every operation has an operationId, and no two share one', () => {
    const ids = operations().map(({ path, method, op }) => {
      assert.ok(op.operationId, `${method} ${path} has no operationId`);
      return op.operationId;
    });
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.includes('postEvents') && ids.includes('getAdminTenantsById'));
  });

  it('errors are declared application/problem+json with the named Problem schema; shared schemas are components', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        assert.deepEqual(Object.keys(response.content ?? {}), ['application/problem+json'], `${method} ${path} ${status}`);
        assert.deepEqual((response.content!['application/problem+json'] as { schema: unknown }).schema, { $ref: '#/components/schemas/Problem' });
      }
    }
    for (const name of ['Problem', 'Tenant', 'Product', 'Event', 'BatchResponse', 'PlanName']) assert.ok(doc.components.schemas[name], name);
    assert.match(JSON.stringify(doc.paths['/v1/events']), /#\/components\/schemas\/EventBatch/);
  });

  it('every route that reads a JSON body declares the 400 of a body that is not JSON and the 413 of one over 1 MB', () => {
    for (const path of ['/v1/events', '/v1/events/sessions', '/v1/events/sessions/end', '/v1/events/exceptions', '/v1/actors/identify']) {
      const statuses = Object.keys(doc.paths[path]!.post!.responses);
      for (const status of ['400', '413']) assert.ok(statuses.includes(status), `${path}: ${statuses.join(', ')}`);
    }
  });

  it('every query route declares the 400 of an unknown parameter, and the 413 and 415 of a body it refuses, as it answers them', async () => {
    const { adminKey } = await tenantWithProduct(t.app, 'business');
    const ingestion = ['/v1/events/sessions', '/v1/events/sessions/end', '/v1/events/exceptions', '/v1/actors/identify'];
    const query = /^\/v1\/(reports|sessions|environment|exceptions|segments|funnels|retention|paths|events|actors|actor-erasures|accounts|licenses)\b/;
    const sample: Record<string, string> = { field: 'os', fingerprint: 'fp', id: randomUUID() };
    let checked = 0;
    for (const { path, method, op } of operations()) {
      if (!query.test(path) || ingestion.includes(path) || (path === '/v1/events' && method === 'post')) continue;
      const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => sample[name] ?? 'x');
      const declared = Object.keys(op.responses);
      const send = (extra: { url?: string; headers?: Record<string, string>; payload?: string }) =>
        t.app.inject({
          method: method.toUpperCase() as 'GET',
          url: extra.url ?? url,
          headers: { authorization: `Bearer ${adminKey}`, ...extra.headers },
          payload: extra.payload,
        });
      const unknown = await send({ url: `${url}?zz=1` });
      assert.equal(unknown.statusCode, 400, `${method} ${path}?zz=1: ${unknown.body}`);
      assert.ok(declared.includes('400'), `${method} ${path} answers 400 and declares ${declared.join(', ')}`);
      checked++;
      if (method !== 'post' && method !== 'patch') continue;
      const text = await send({ headers: { 'content-type': 'text/plain' }, payload: '{}' });
      assert.equal(text.statusCode, 415, `${method} ${path} text/plain: ${text.body}`);
      const big = await send({ headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x'.repeat(1_100_000) }) });
      assert.equal(big.statusCode, 413, `${method} ${path} over 1 MB: ${big.body}`);
      for (const status of ['413', '415']) assert.ok(declared.includes(status), `${method} ${path} answers ${status} and declares ${declared.join(', ')}`);
    }
    assert.ok(checked > 30, `${checked} query operations`);
  });

  it('a query whose answer comes as CSV (or NDJSON) when asked declares that media type beside JSON, and no other does', async () => {
    const { adminKey } = await tenantWithProduct(t.app, 'business');
    const query = /^\/v1\/(reports|sessions|environment|exceptions|segments|funnels|retention|paths|events|actors|accounts|licenses)\b/;
    const bodies: Record<string, unknown> = {
      '/v1/funnels': {
        steps: [
          { category: 'c', name: 'a' },
          { category: 'c', name: 'b' },
        ],
      },
      '/v1/retention': { period: 'day', periods: 2 },
    };
    const seen: string[] = [];
    for (const { path, method, op } of operations()) {
      if (!query.test(path) || path.includes('{') || (method === 'post' && !(path in bodies))) continue;
      const declared = Object.keys(op.responses['200']?.content ?? {});
      for (const type of ['text/csv', 'application/x-ndjson']) {
        const res = await t.app.inject({
          method: method.toUpperCase() as 'GET',
          url: method === 'get' && path.startsWith('/v1/events') ? `${path}?range=7d` : path,
          headers: { authorization: `Bearer ${adminKey}`, accept: type, ...(method === 'post' && { 'content-type': 'application/json' }) },
          ...(method === 'post' && { payload: JSON.stringify(bodies[path]) }),
        });
        if (res.statusCode !== 200) continue;
        const answered = String(res.headers['content-type']).split(';')[0]!;
        assert.equal(declared.includes(answered), true, `${method} ${path} answers ${answered} to Accept: ${type} and declares ${declared.join(', ')}`);
        if (answered === type) seen.push(`${method} ${path} ${type}`);
        else assert.equal(declared.includes(type), false, `${method} ${path} declares ${type} but answers ${answered}`);
      }
    }
    for (const op of ['get /v1/reports/trends text/csv', 'post /v1/funnels text/csv', 'get /v1/events application/x-ndjson', 'get /v1/sessions text/csv'])
      assert.ok(seen.includes(op), `${op} in ${seen.join('; ')}`);
    assert.equal(JSON.stringify(doc).includes('x-exports'), false);
  });

  it('openapi-typescript generates types from it, and a typed call type-checks (a wrong one does not)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-openapi-'));
    try {
      writeFileSync(join(dir, 'schema.d.ts'), astToString(await openapiTS(doc as never)));
      writeFileSync(
        join(dir, 'call.ts'),
        `import type { components, operations, paths } from './schema.js';
type CreateProduct = paths['/v1/products']['post']['requestBody']['content']['application/json'];
type Product = operations['postProducts']['responses']['201']['content']['application/json'];
type Problem = components['schemas']['Problem'];
type Plan = components['schemas']['Tenant']['plan'];

export async function createProduct(base: string, key: string, body: CreateProduct): Promise<Product> {
  const res = await fetch(base + '/v1/products', { method: 'POST', headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(((await res.json()) as Problem).code);
  return (await res.json()) as Product;
}

export async function demo(): Promise<string> {
  const product = await createProduct('http://127.0.0.1:8080', 'tk_live_x', { slug: 'app', name: 'App' });
  const plan: Plan = 'unlimited';
  const status: 'active' | 'deleting' = product.status;
  return product.id + plan + status;
}

// @ts-expect-error a product needs a slug
void createProduct('', '', { name: 'no slug' });
`,
      );
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const args = [
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--skipLibCheck',
        '--types',
        'node',
        join(dir, 'call.ts'),
      ];
      await run(process.execPath, [tsc, ...args], { cwd: process.cwd() }).catch((err: { stdout: string }) => assert.fail(`tsc: ${err.stdout}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
