// Assertions shared by the BAD-INPUTS tests: what a batch answered, and what the store then holds.
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Db } from '../../src/storage/db.js';

/** The event_ids stored for a tenant, sorted. */
export async function storedIds(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db.query<{ event_id: string }>('SELECT event_id::text AS event_id FROM events WHERE tenant_id = $1 ORDER BY event_id', [tenantId]);
  return rows.map((r) => r.event_id);
}

/** The reasons of a tenant's dead letters, oldest first. */
export async function deadLetterReasons(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db.query<{ reason: string }>('SELECT reason FROM invalid_events WHERE tenant_id = $1 ORDER BY id', [tenantId]);
  return rows.map((r) => r.reason);
}

/** An element's JSON text with raw `"key": value` text appended: for what JSON.stringify cannot write (`__proto__`, 1e400). */
export function withRaw(element: Record<string, unknown>, raw: string): string {
  const text = JSON.stringify(element);
  return `${text.slice(0, -1)},${raw}}`;
}

/** A batch body from elements that are objects or already JSON text. */
export function rawBatch(elements: (Record<string, unknown> | string)[]): string {
  return `[${elements.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))).join(',')}]`;
}

export interface BatchResult {
  index: number;
  event_id: string | null;
  status: string;
  reason?: string;
  message?: string;
}

/**
 * A 207 in which exactly the elements listed in `rejected` are rejected, each with its reason
 * (a string, or a list of acceptable reasons), and every other element is accepted.
 */
export function assertRejectedAlone(res: LightMyRequestResponse, length: number, rejected: Record<number, string | readonly string[]>): BatchResult[] {
  assert.equal(res.statusCode, 207, `expected 207, got ${res.statusCode}: ${res.body.slice(0, 500)}`);
  const body = res.json() as { accepted: number; rejected: number; results: BatchResult[] };
  assert.equal(body.results.length, length);
  const bad = Object.keys(rejected).map(Number);
  assert.equal(body.rejected, bad.length, JSON.stringify(body.results));
  assert.equal(body.accepted, length - bad.length, JSON.stringify(body.results));
  body.results.forEach((r, i) => {
    assert.equal(r.index, i);
    const want = rejected[i];
    if (want === undefined) {
      assert.equal(r.status, 'accepted', `element ${i}: ${JSON.stringify(r)}`);
    } else {
      assert.equal(r.status, 'rejected', `element ${i}: ${JSON.stringify(r)}`);
      const allowed = typeof want === 'string' ? [want] : want;
      assert.ok(r.reason !== undefined && allowed.includes(r.reason), `element ${i}: reason ${r.reason}, expected ${allowed.join(' or ')} (${r.message})`);
      assert.equal(typeof r.message, 'string');
    }
  });
  return body.results;
}

/** A problem+json answer with this status and code. */
export function assertProblem(
  res: LightMyRequestResponse | { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: string,
): void {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body.slice(0, 500)}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = JSON.parse(res.body) as { code: string; status: number };
  assert.equal(body.code, code);
  assert.equal(body.status, status);
}
