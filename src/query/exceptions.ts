import { validationError } from '../errors.js';
import type { Db } from '../storage/db.js';
import { rollupInfo } from '../storage/accounts.js';
import { exceptionGroups } from '../storage/exception-groups.js';
import { keysetCursor } from './filters.js';
import { pageOf } from './page.js';
import { echo, resolveProduct, resolveRange, type Interval } from './scope.js';

/** The filters of GET /v1/exceptions (the route's schema, src/http/schemas/accounts.ts, validates them). */
export interface ExceptionFilter {
  product?: string | undefined;
  version?: string | undefined;
  severity?: 'fatal' | 'non_fatal' | undefined;
  range?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  tz?: string | undefined;
  interval?: Interval | undefined;
  since?: string | undefined;
  until?: string | undefined;
  account_id?: string | undefined;
  license_id?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}
type Query = ExceptionFilter;

// With no range at all the list is the whole history (docs/accounts.md); its echo says so.
const EPOCH = new Date(0);

interface ListWindow {
  from: Date;
  to: Date;
  tz: string;
  interval: Interval;
  /** What bounds occurred_at: only what the caller named (with nothing named, not even now). */
  bounds: { since?: string; until?: string };
}

/**
 * The query side's common range (CONTRACT.md: `range` or `from`/`to` in `tz`), or the list's own
 * `since`/`until` instants; not both. Either way the answer echoes the range it covered.
 */
function listWindow(query: Query, now: Date): ListWindow {
  const common = query.range !== undefined || query.from !== undefined || query.to !== undefined;
  const own = query.since !== undefined || query.until !== undefined;
  if (common && own) throw validationError([{ field: 'since', message: 'give range or from/to, or since/until, not both' }]);
  const resolved = resolveRange(query, now);
  if (common) return { ...resolved, bounds: { since: resolved.from.toISOString(), until: resolved.to.toISOString() } };
  const from = query.since !== undefined ? new Date(query.since) : EPOCH;
  const to = query.until !== undefined ? new Date(query.until) : now;
  // As from/to: an empty or inverted window is a 400, not an empty page under a range that runs backwards.
  if (from >= to) throw validationError([{ field: query.until !== undefined ? 'until' : 'since', message: 'since must be before until (default now)' }]);
  return { ...resolved, from, to, bounds: { since: query.since, until: query.until } };
}

/**
 * Exception groups by fingerprint, newest first, with the filters of GET /v1/exceptions, and the
 * head every query answer carries (range, tz, interval, refreshed_at). From the stored exceptions
 * (exact and current, not derived data). The caller has passed the account guard when
 * account_id or license_id is set.
 */
export async function exceptionGroupsQuery(db: Db, tenantId: string, query: Query, now: Date) {
  const w = listWindow(query, now);
  const page = await exceptionGroupsPage(db, tenantId, { ...query, ...w.bounds });
  const rollup = await rollupInfo(db, tenantId);
  return { ...echo(w), refreshed_at: rollup?.refreshed_at ?? null, ...page };
}

/** One page of groups between `since` and `until` (the account overview's recent groups too). */
export async function exceptionGroupsPage(db: Db, tenantId: string, query: Query) {
  const product = await resolveProduct(db, tenantId, query);
  // The cursor carries last_seen to the microsecond (clients send finer than milliseconds).
  const before = keysetCursor(query.cursor);
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
  const page = pageOf(rows, limit, (r) => [r.last_seen_key, r.fingerprint]);
  return { data: page.data.map(({ last_seen_key: _k, ...group }) => group), next_cursor: page.next_cursor };
}
