import type { Static } from 'typebox';
import type { Db } from '../storage/db.js';
import { exceptionGroups } from '../storage/exception-groups.js';
import type { ExceptionQuery } from '../http/schemas/accounts.js';
import { cursorKey, pageOf } from './page.js';
import { resolveProduct } from './scope.js';

type Query = Static<typeof ExceptionQuery>;

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
