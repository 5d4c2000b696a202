// The OpenAPI document's finishing, in one place rather than in every route file: an operationId
// for every operation (from its method and path, unless a route names its own), the shared
// schemas of src/http/schemas/ as named components referenced by $ref, and errors declared as
// application/problem+json, the type they are sent with.
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import * as accounts from './schemas/accounts.js';
import * as admin from './schemas/admin.js';
import * as common from './schemas/common.js';
import * as dataRights from './schemas/data-rights.js';
import * as events from './schemas/events.js';
import * as products from './schemas/products.js';
import * as records from './schemas/records.js';

/** Modules whose exported schemas become components, under their export names. */
const SCHEMA_MODULES: Record<string, unknown>[] = [common, admin, events, products, records, accounts, dataRights];

/** Too small or too generic to be worth a name (a date-time string, a page's parameters). */
const UNNAMED = new Set(['DateTime', 'NullableDateTime', 'IdParams', 'Pagination']);

const pascal = (s: string) => s.replace(/(^|[-_.])([a-z0-9])/gi, (_m, _sep, c: string) => c.toUpperCase());

/**
 * GET /v1/products/:id → getProductsById; POST /admin/v1/tenants/:id/keys → postAdminTenantsByIdKeys.
 * Mechanical, so that it is unique and stable without a list to keep in step with the routes.
 */
export function operationIdFor(method: string, url: string): string {
  const parts = url
    .split('/')
    .filter((p) => p && p !== 'v1')
    .map((p) => (p.startsWith(':') ? `By${pascal(p.slice(1))}` : pascal(p.replace(/[{}]/g, ''))));
  return method.toLowerCase() + parts.join('');
}

function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What @fastify/swagger does to a JSON schema on its way into the document (const → enum, patternProperties → additionalProperties, no $id). */
function asInDocument(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asInDocument);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$id' || k === '$schema') continue;
    if (k === 'const') out.enum = [v];
    else if (k === 'patternProperties') out.additionalProperties = asInDocument(Object.values(v as object)[0]);
    else out[k] = asInDocument(v);
  }
  return out;
}

function namedSchemas(): Map<string, { name: string; schema: unknown }> {
  const byShape = new Map<string, { name: string; schema: unknown }>();
  for (const mod of SCHEMA_MODULES) {
    for (const [name, value] of Object.entries(mod)) {
      if (UNNAMED.has(name) || typeof value !== 'object' || value === null) continue;
      if (!('type' in value) && !('enum' in value) && !('anyOf' in value)) continue;
      const plain = asInDocument(JSON.parse(JSON.stringify(value)));
      const { description: _d, ...bare } = plain as Record<string, unknown>;
      for (const shape of [stable(plain), stable(bare)]) if (!byShape.has(shape)) byShape.set(shape, { name, schema: plain });
    }
  }
  return byShape;
}

type Doc = { paths?: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } };
type Operation = { responses?: Record<string, { content?: Record<string, unknown> }> };

/** Replaces every schema equal to a named one by a $ref to it (the named ones' own parts too). */
function hoist(doc: Doc): void {
  const named = namedSchemas();
  const used = new Map<string, unknown>();
  const walk = (node: unknown, isRoot = false): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n));
    if (!node || typeof node !== 'object') return node;
    if (!isRoot) {
      // A response may add its own description to a shared schema (problems(): "problem+json").
      const { description: _d, ...bare } = node as Record<string, unknown>;
      const hit = named.get(stable(node)) ?? named.get(stable(bare));
      if (hit) {
        if (!used.has(hit.name)) {
          used.set(hit.name, null); // reserved before walking, for schemas that contain themselves
          used.set(hit.name, walk(hit.schema, true));
        }
        return { $ref: `#/components/schemas/${hit.name}` };
      }
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v)]));
  };
  doc.paths = walk(doc.paths ?? {}) as Doc['paths'];
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, ...Object.fromEntries([...used].sort(([a], [b]) => a.localeCompare(b))) } };
}

/** Errors are problem+json (CONTRACT.md): so declared, with the Problem schema. */
function problemJson(doc: Doc): void {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (Number(status) < 400 || !response.content?.['application/json']) continue;
        response.content = { 'application/problem+json': response.content['application/json'] };
      }
    }
  }
}

/** A 200 that also answers CSV or NDJSON (the route schema's `x-exports`): those media types, each a text body. */
function exportTypes(doc: Doc): void {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item) as (Operation & { 'x-exports'?: string[] })[]) {
      const types = op['x-exports'];
      if (!types) continue;
      delete op['x-exports'];
      const ok = op.responses?.['200'];
      if (!ok?.content) continue;
      for (const type of types)
        ok.content[type] = {
          schema: { type: 'string', description: type === 'text/csv' ? 'CSV: a header line, then a row per line' : 'one JSON object per line' },
        };
    }
  }
}

export const openapiTransforms: Pick<FastifyDynamicSwaggerOptions, 'transform' | 'transformObject'> = {
  transform: ({ schema, url, route }) => {
    if (!schema || (schema as { operationId?: string }).operationId) return { schema, url };
    const method = Array.isArray(route.method) ? route.method[0]! : route.method;
    return { schema: { ...schema, operationId: operationIdFor(method, url) }, url };
  },
  transformObject: (documentObject) => {
    const doc = 'openapiObject' in documentObject ? (documentObject.openapiObject as Doc) : (documentObject.swaggerObject as Doc);
    problemJson(doc);
    exportTypes(doc);
    hoist(doc);
    return doc as never;
  },
};
