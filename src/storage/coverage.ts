import { NO_WINDOW, type RollupInfo } from './accounts.js';
import type { Queryable, ScriptStatement } from './db.js';
import { iso } from './rows.js';
import { inWindowSql, windowMonths, windowMonthsSql } from './read-model/tables.js';

// /v1/accounts/coverage: how much of what arrives carries account and license context, where the
// rest comes from, and license ids that do not look like per-contract identifiers. Built at each
// refresh of the tenant into tenant_rollups.coverage (as of refreshed_at, like the account and
// license snapshots it sits beside); read live only until a tenant's first refresh after migration 200.
export const PER_ACCOUNT_LICENSE_LIMIT = 50;

const MEASURES = ['events', 'sessions', 'exceptions'] as const;

/** The coverage facts of the window (UTC days from `$window`), as one jsonb value, from the read model and the snapshots. */
function factsSql(tenant: string, window: string, months: [string, string, string, string]): string {
  const sums = MEASURES.map(
    (m) => `coalesce(sum(${m}), 0) AS ${m}, coalesce(sum(${m}) FILTER (WHERE account_id <> ''), 0) AS ${m}_a,
            coalesce(sum(${m}) FILTER (WHERE license_id <> ''), 0) AS ${m}_l`,
  ).join(', ');
  const listed = (table: string, key: string, count: string, floor: number) =>
    `(SELECT coalesce(jsonb_agg(jsonb_build_array(${key}, ${count}) ORDER BY ${count} DESC, ${key}), '[]')
        FROM (SELECT ${key}, ${count} FROM ${table} WHERE tenant_id = ${tenant} AND ${count} > ${floor} ORDER BY 2 DESC, 1 LIMIT 20) x)`;
  // g: the window's usage days per (product, version), one read; the totals are its sums. m: the
  // window's (license, actor) pairs from rm_actor_months, not every actor day. Distinct counts go by
  // hashing (SELECT DISTINCT, then count), not count(DISTINCT), which sorts. Licenses under several
  // accounts and accounts with many licenses are the snapshots' own counts (refreshTenant builds
  // them first, with the same rule: rows with events, both ids present).
  return `WITH g AS MATERIALIZED (
       SELECT product_id, product_version, ${sums},
              coalesce(sum(events) FILTER (WHERE account_id = ''), 0) AS missing_account,
              coalesce(sum(events) FILTER (WHERE license_id = ''), 0) AS missing_license
         FROM rm_usage_days WHERE tenant_id = ${tenant} AND ${inWindowSql('day', window)} GROUP BY 1, 2),
     m AS MATERIALIZED (
       SELECT license_id, actor_id FROM rm_actor_months WHERE tenant_id = ${tenant} AND license_id <> '' AND ${windowMonthsSql(...months)})
     SELECT jsonb_build_object(
       'shares', (SELECT jsonb_build_object(${MEASURES.map((m) => `'${m}', jsonb_build_array(coalesce(sum(${m}), 0), coalesce(sum(${m}_a), 0), coalesce(sum(${m}_l), 0))`).join(', ')}) FROM g),
       'missing', (SELECT coalesce(jsonb_agg(jsonb_build_array(slug, product_version, events, missing_account, missing_license)
                                             ORDER BY missing_account + missing_license DESC, slug, product_version), '[]')
                     FROM (SELECT p.slug, g.product_version, g.events, g.missing_account, g.missing_license
                             FROM g JOIN products p ON p.id = g.product_id WHERE g.missing_account > 0 OR g.missing_license > 0
                            ORDER BY g.missing_account + g.missing_license DESC, 1, 2 LIMIT 10) x),
       'licenses', (SELECT count(*) FROM (SELECT DISTINCT license_id FROM m) l),
       'actors', (SELECT count(*) FROM (SELECT DISTINCT actor_id FROM m) a),
       'shared', ${listed('ru_licenses', 'license_id', 'accounts', 1)},
       'crowded', ${listed('ru_accounts', 'account_id', 'licenses', PER_ACCOUNT_LICENSE_LIMIT)}) AS coverage`;
}

/**
 * The refresh's last statement (rollups.ts, refreshTenant): the tenant's refresh time and window,
 * and its coverage facts, built after its account and license snapshots.
 */
export function refreshCoverage(tenantId: string, now: Date, windowStart: string): ScriptStatement {
  return {
    sql: `INSERT INTO tenant_rollups (tenant_id, refreshed_at, window_start, coverage)
     SELECT $1, $2, $3::date, f.coverage FROM (${factsSql('$1', '$3', ['$4', '$5', '$6', '$7'])}) f
     ON CONFLICT (tenant_id) DO UPDATE SET refreshed_at = excluded.refreshed_at, window_start = excluded.window_start, coverage = excluded.coverage`,
    params: [tenantId, now, windowStart, ...windowMonths(windowStart)],
  };
}

type Triple = [number | string, number | string, number | string];
interface Facts {
  shares: Record<(typeof MEASURES)[number], Triple>;
  missing: [string, string, number | string, number | string, number | string][];
  licenses: number | string;
  actors: number | string;
  shared: [string, number | string][];
  crowded: [string, number | string][];
}

const num = (v: unknown) => Number(v ?? 0);
const pct = (part: number, total: number) => (total === 0 ? 0 : Math.round((part / total) * 10_000) / 100);

/**
 * The coverage answer over the tenant's window, with the refresh it is as of (`info`, undefined
 * before the first): the facts that refresh built, read with it in one row, or the same facts read
 * live (a tenant refreshed before migration 200; an empty window before any refresh).
 */
export async function coverage(q: Queryable, tenantId: string) {
  const [row] = await q.query<{ refreshed_at: Date; window_start: string; coverage: Facts | null }>(
    'SELECT refreshed_at, window_start::text AS window_start, coverage FROM tenant_rollups WHERE tenant_id = $1',
    [tenantId],
  );
  const info: RollupInfo | undefined = row && { refreshed_at: iso(row.refreshed_at)!, window_start: row.window_start };
  const windowStart = row?.window_start ?? NO_WINDOW;
  const facts =
    row?.coverage ??
    (await q.query<{ coverage: Facts }>(factsSql('$1', '$2', ['$3', '$4', '$5', '$6']), [tenantId, windowStart, ...windowMonths(windowStart)]))[0]!.coverage;
  const share = (m: (typeof MEASURES)[number]) => {
    const [total, withAccount, withLicense] = facts.shares[m].map(num) as [number, number, number];
    return { total, with_account: withAccount, with_license: withLicense, account_pct: pct(withAccount, total), license_pct: pct(withLicense, total) };
  };
  const warnings: { type: string; message: string; [detail: string]: unknown }[] = [];
  const [licenses, actors] = [num(facts.licenses), num(facts.actors)];
  if (actors > 0 && licenses > actors / 2) {
    warnings.push({
      type: 'licenses_look_per_user',
      message: `${licenses} distinct license ids for ${actors} actors: license_id should identify a contract, not a user or a device`,
      distinct_licenses: licenses,
      distinct_actors: actors,
    });
  }
  for (const [license, accounts] of facts.shared) {
    warnings.push({
      type: 'license_in_several_accounts',
      message: `license ${license} was seen under ${num(accounts)} accounts`,
      license_id: license,
      accounts: num(accounts),
    });
  }
  for (const [account, count] of facts.crowded) {
    warnings.push({
      type: 'account_with_many_licenses',
      message: `account ${account} has ${num(count)} licenses`,
      account_id: account,
      licenses: num(count),
    });
  }
  return {
    info,
    events: share('events'),
    sessions: share('sessions'),
    exceptions: share('exceptions'),
    top_missing_sources: facts.missing.map(([product, version, events, missingAccount, missingLicense]) => ({
      product,
      product_version: version,
      events: num(events),
      missing_account: num(missingAccount),
      missing_license: num(missingLicense),
    })),
    warnings,
  };
}
