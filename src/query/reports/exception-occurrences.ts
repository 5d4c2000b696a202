import { Type, type Static } from 'typebox';
import { notFound } from '../../errors.js';
import type { Queryable } from '../../storage/db.js';
import { exactTime, iso } from '../../storage/rows.js';
import type { Scope } from '../scope.js';
import { head, keysetCursor, recordWhere, RecordFilterProps, resolveFilters, type Principal } from '../filters.js';
import { pageOf } from '../page.js';
import { seesAccounts } from '../guard.js';
import { Params } from '../params.js';

// One exception group's occurrences (docs/reports.md), newest first by occurred_at, then
// exception_id, keyset-paged with the one cursor of the query side. The group trend's filters
// (the report grammar on records: range or from/to in tz, product, version, account_id,
// license_id) plus the group list's severity; `interval`, a common parameter, is taken and echoed
// but cuts nothing, and `compare` does not apply to a list. From
// the stored exceptions: exact and current. account_id and license_id are shown only to keys that
// may see accounts, as in the event explorer.

export const ExceptionOccurrencesQuery = Type.Object({
  ...(({ compare: _c, ...rest }) => rest)(RecordFilterProps),
  severity: Type.Optional(Type.Enum(['fatal', 'non_fatal'])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
});

export interface Occurrence {
  exception_id: string;
  occurred_at: string;
  received_at: string;
  product: string;
  product_version: string;
  exception_type: string;
  severity: 'fatal' | 'non_fatal';
  message: string | null;
  actor_id: string;
  identified_actor_id: string | null;
  session_id: string | null;
  account_id?: string | null;
  license_id?: string | null;
  environment: unknown;
}

export async function exceptionOccurrences(q: Queryable, principal: Principal, fingerprint: string, p: Static<typeof ExceptionOccurrencesQuery>, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  const before = keysetCursor(p.cursor);
  const limit = p.limit ?? 50;
  await requireGroup(q, f.scope, fingerprint);
  const sql = new Params();
  const where = [...recordWhere(f, sql, 'occurred_at', 'e'), `e.fingerprint = ${sql.add(fingerprint)}`];
  if (p.severity !== undefined) where.push(`e.severity = ${sql.add(p.severity)}`);
  if (before) where.push(`(e.occurred_at, e.exception_id) < (${sql.add(before[0])}::timestamptz, ${sql.add(before[1])})`);
  const rows = await q.query<Omit<Occurrence, 'occurred_at' | 'received_at'> & { occurred_at: Date; received_at: Date; at_key: string }>(
    `SELECT e.exception_id, e.occurred_at, e.received_at, p.slug AS product, e.product_version, e.exception_type, e.severity, e.message,
            e.actor_id, l.identified_actor_id, e.session_id, e.account_id, e.license_id, e.environment_context AS environment, ${exactTime('e.occurred_at')} AS at_key
       FROM exceptions e JOIN products p ON p.id = e.product_id
       LEFT JOIN actor_links l ON l.tenant_id = e.tenant_id AND l.anonymous_actor_id = e.actor_id
      WHERE ${where.join(' AND ')} ORDER BY e.occurred_at DESC, e.exception_id DESC LIMIT ${sql.add(limit + 1)}`,
    sql.values,
  );
  const accounts = seesAccounts(principal);
  const paged = pageOf(rows, limit, (r) => [r.at_key, r.exception_id]);
  const data: Occurrence[] = paged.data.map(({ at_key: _k, account_id, license_id, environment, ...r }) => ({
    ...r,
    occurred_at: iso(r.occurred_at)!,
    received_at: iso(r.received_at)!,
    ...(accounts ? { account_id, license_id } : {}),
    environment: typeof environment === 'string' ? (JSON.parse(environment) as unknown) : (environment ?? null),
  }));
  return { ...(await head(q, f.scope)), data, next_cursor: paged.next_cursor };
}

/** 404 unless the group has an occurrence (ever; in the product, with a product filter), as the group trend answers. */
async function requireGroup(q: Queryable, s: Scope, fingerprint: string): Promise<void> {
  const sql = new Params();
  const [hit] = s.empty
    ? []
    : await q.query<{ hit: number }>(
        `SELECT 1 AS hit FROM exceptions WHERE tenant_id = ${sql.add(s.tenantId)} AND fingerprint = ${sql.add(fingerprint)}${s.productId ? ` AND product_id = ${sql.add(s.productId)}` : ''} LIMIT 1`,
        sql.values,
      );
  if (!hit) throw notFound('not_found', 'exception group');
}
