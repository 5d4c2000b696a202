import type { Scope } from '../scope.js';
import { Params } from '../params.js';

// SQL pieces shared by the queries on raw events (funnels, paths, drill-down): the counted unit
// with identity links applied, the scope's filters, and event matchers (category + name + property
// equality). Values go in as parameters; only placeholders are spliced into the text.

export type CountBy = 'actor' | 'session' | 'account';

export interface EventMatcher {
  category: string;
  name: string;
  properties?: Record<string, string | number | boolean> | undefined;
}

/** SQL: the tenant's product ids as an array, for a scan of events_by_name without a product. */
export const tenantProducts = (tenant: string) => `ARRAY(SELECT id FROM products WHERE tenant_id = ${tenant})`;

/** The unit an event counts for. An anonymous actor linked by identify counts as the identified one. */
export function unitSql(by: CountBy): { expr: string; join: string; present: string } {
  if (by === 'session') return { expr: 'e.session_id::text', join: '', present: 'e.session_id IS NOT NULL' };
  if (by === 'account') return { expr: 'e.account_id', join: '', present: "e.account_id IS NOT NULL AND e.account_id <> ''" };
  return {
    expr: 'COALESCE(l.identified_actor_id, e.actor_id)',
    join: 'LEFT JOIN actor_links l ON l.tenant_id = e.tenant_id AND l.anonymous_actor_id = e.actor_id',
    present: 'true',
  };
}

/**
 * The scope's filters on events `e` (tenant, product, version, account, license). `byName`: the
 * query also names the events it reads (category and name), so it can read them through
 * events_by_name, which leads with (tenant, product): without a product in the scope the tenant's
 * products go in as a list, which PostgreSQL scans once each, where the tenant alone would bound
 * the scan to the tenant's whole index.
 */
export function scopeSql(s: Scope, p: Params, byName = false): string {
  const parts = [`e.tenant_id = ${p.add(s.tenantId)}`];
  if (s.productId) parts.push(`e.product_id = ${p.add(s.productId)}`);
  else if (byName) parts.push(`e.product_id = ANY(${tenantProducts(p.add(s.tenantId))})`);
  if (s.version !== undefined) parts.push(`e.product_version = ${p.add(s.version)}`);
  if (s.accountId !== undefined) parts.push(`e.account_id = ${p.add(s.accountId)}`);
  if (s.licenseId !== undefined) parts.push(`e.license_id = ${p.add(s.licenseId)}`);
  return parts.join(' AND ');
}

/** Whether a matcher filters by property equality. */
export const hasProps = (m: EventMatcher): boolean => !!m.properties && Object.keys(m.properties).length > 0;

/** SQL: an event's properties hold the matcher's (property equality). */
export const propsSql = (m: EventMatcher, p: Params): string => `e.properties @> ${p.add(JSON.stringify(m.properties))}::jsonb`;

export function matchSql(m: EventMatcher, p: Params): string {
  return `(e.category = ${p.add(m.category)} AND e.name = ${p.add(m.name)}${hasProps(m) ? ` AND ${propsSql(m, p)}` : ''})`;
}

/** A bit mask of the matchers an event satisfies (bit i for matcher i). */
export function maskSql(matchers: string[]): string {
  return matchers.length === 0 ? '0' : matchers.map((m, i) => `(CASE WHEN ${m} THEN ${1 << i} ELSE 0 END)`).join(' + ');
}
