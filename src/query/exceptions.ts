import type { Db } from '../storage/db.js';
import { exceptionGroups } from '../storage/exception-groups.js';
import { cursorKey, pageOf } from './page.js';
import { resolveProduct } from './scope.js';

/** The filters of GET /v1/exceptions (the route's schema, src/http/schemas/accounts.ts, validates them). */
export interface ExceptionFilter {
  product?: string | undefined;
  version?: string | undefined;
  severity?: 'fatal' | 'non_fatal' | undefined;
  since?: string | undefined;
  until?: string | undefined;
  account_id?: string | undefined;
  license_id?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}
type Query = ExceptionFilter;

/**
 * Exception groups by fingerprint, newest first, with the filters of GET /v1/exceptions; the
 * account route calls it too. From the stored exceptions (exact and current, not derived data).
 * The caller has passed the plan guard when account_id or license_id is set.
 */
export async function exceptionGroupsQuery(db: Db, tenantId: string, query: Query) {
  const product = await resolveProduct(db, tenantId, query);
  const before = cursorKey(query.cursor, ['timestamp', 'text']);
  if (product.empty) return { data: [], next_cursor: null };
  const limit = query.limit ?? 50;
  const rows = await exceptionGroups(db, tenantId, {
    productId: product.productId,
    version: product.version,
    severity: query.severity,
    since: query.since,
    until: query.until,
    accountId: query.account_id,
    licenseId: query.license_id,
    before: before && { lastSeen: before[0]!, fingerprint: before[1]! },
    limit: limit + 1,
  });
  return pageOf(rows, limit, (r) => [r.last_seen, r.fingerprint]);
}
