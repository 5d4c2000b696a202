import type { Queryable } from './db.js';
import { monthsSince, monthsSinceSql } from './read-model/tables.js';

// /v1/accounts/coverage: how much of what arrives carries account and license context, where the
// rest comes from, and license ids that do not look like per-contract identifiers.
export const PER_ACCOUNT_LICENSE_LIMIT = 50;

const num = (v: unknown) => Number(v ?? 0);
const pct = (part: number, total: number) => (total === 0 ? 0 : Math.round((part / total) * 10_000) / 100);

/** Per measure (events, sessions, exceptions): the window's total and how much of it carries an account and a license. One read of the usage days. */
async function shares(q: Queryable, tenantId: string, windowStart: string) {
  const measures = ['events', 'sessions', 'exceptions'] as const;
  const [r] = await q.query<Record<string, unknown>>(
    `SELECT ${measures
      .map(
        (m) => `coalesce(sum(${m}), 0) AS ${m}_total, coalesce(sum(${m}) FILTER (WHERE account_id <> ''), 0) AS ${m}_account,
                coalesce(sum(${m}) FILTER (WHERE license_id <> ''), 0) AS ${m}_license`,
      )
      .join(', ')}
       FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date`,
    [tenantId, windowStart],
  );
  const share = (m: (typeof measures)[number]) => {
    const [total, withAccount, withLicense] = [num(r?.[`${m}_total`]), num(r?.[`${m}_account`]), num(r?.[`${m}_license`])];
    return { total, with_account: withAccount, with_license: withLicense, account_pct: pct(withAccount, total), license_pct: pct(withLicense, total) };
  };
  return { events: share('events'), sessions: share('sessions'), exceptions: share('exceptions') };
}

/**
 * Coverage over the window (UTC days from windowStart). Its statements are sent together (on
 * PostgreSQL each on a connection of its own). Distinct counts go by hashing (SELECT DISTINCT, then
 * count), not count(DISTINCT), which sorts every group's rows; the distinct licenses and actors of
 * the window come from rm_actor_months (one row per actor, UTC month, account and license, its days
 * with events as bits), not from every actor day (docs/accounts.md, measured).
 */
export async function coverage(q: Queryable, tenantId: string, windowStart: string) {
  const p = [tenantId, windowStart];
  const usage = `FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date AND license_id <> '' AND account_id <> '' AND events > 0`;
  const [share, missing, [perUser], shared, crowded] = await Promise.all([
    shares(q, tenantId, windowStart),
    q.query(
      `SELECT p.slug AS product, f.product_version, f.total, f.missing_account, f.missing_license
         FROM (SELECT product_id, product_version, sum(events) AS total,
                      coalesce(sum(events) FILTER (WHERE account_id = ''), 0) AS missing_account,
                      coalesce(sum(events) FILTER (WHERE license_id = ''), 0) AS missing_license
                 FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date GROUP BY 1, 2) f
         JOIN products p ON p.id = f.product_id
        WHERE f.missing_account > 0 OR f.missing_license > 0
        ORDER BY f.missing_account + f.missing_license DESC, 1, 2 LIMIT 10`,
      p,
    ),
    q.query(
      `WITH m AS MATERIALIZED (
         SELECT license_id, actor_id FROM rm_actor_months
          WHERE tenant_id = $1 AND license_id <> '' AND ${monthsSinceSql('$2', '$3')})
       SELECT (SELECT count(*) FROM (SELECT DISTINCT license_id FROM m) l) AS licenses, (SELECT count(*) FROM (SELECT DISTINCT actor_id FROM m) a) AS actors`,
      [tenantId, ...monthsSince(windowStart)],
    ),
    q.query(
      `SELECT license_id, count(*) AS accounts FROM (SELECT DISTINCT license_id, account_id ${usage}) x
        GROUP BY license_id HAVING count(*) > 1 ORDER BY 2 DESC, 1 LIMIT 20`,
      p,
    ),
    q.query(
      `SELECT account_id, count(*) AS licenses FROM (SELECT DISTINCT account_id, license_id ${usage}) x
        GROUP BY account_id HAVING count(*) > $3 ORDER BY 2 DESC, 1 LIMIT 20`,
      [...p, PER_ACCOUNT_LICENSE_LIMIT],
    ),
  ]);

  const warnings: { type: string; message: string; [detail: string]: unknown }[] = [];
  const licenses = num(perUser?.licenses);
  const actors = num(perUser?.actors);
  if (actors > 0 && licenses > actors / 2) {
    warnings.push({
      type: 'licenses_look_per_user',
      message: `${licenses} distinct license ids for ${actors} actors: license_id should identify a contract, not a user or a device`,
      distinct_licenses: licenses,
      distinct_actors: actors,
    });
  }
  for (const r of shared) {
    warnings.push({
      type: 'license_in_several_accounts',
      message: `license ${String(r.license_id)} was seen under ${num(r.accounts)} accounts`,
      license_id: r.license_id,
      accounts: num(r.accounts),
    });
  }
  for (const r of crowded) {
    warnings.push({
      type: 'account_with_many_licenses',
      message: `account ${String(r.account_id)} has ${num(r.licenses)} licenses`,
      account_id: r.account_id,
      licenses: num(r.licenses),
    });
  }
  return {
    ...share,
    top_missing_sources: missing.map((r) => ({
      product: r.product as string,
      product_version: r.product_version as string,
      events: num(r.total),
      missing_account: num(r.missing_account),
      missing_license: num(r.missing_license),
    })),
    warnings,
  };
}
