import type { Queryable } from './db.js';

// /v1/accounts/coverage: how much of what arrives carries account and license context, where the
// rest comes from, and license ids that do not look like per-contract identifiers.
export const PER_ACCOUNT_LICENSE_LIMIT = 50;

const num = (v: unknown) => Number(v ?? 0);
const pct = (part: number, total: number) => (total === 0 ? 0 : Math.round((part / total) * 10_000) / 100);

async function shares(q: Queryable, measure: string, tenantId: string, windowStart: string) {
  const [r] = await q.query(
    `SELECT coalesce(sum(${measure}), 0) AS total,
            coalesce(sum(${measure}) FILTER (WHERE account_id <> ''), 0) AS with_account,
            coalesce(sum(${measure}) FILTER (WHERE license_id <> ''), 0) AS with_license
       FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date`,
    [tenantId, windowStart],
  );
  const total = num(r?.total);
  const withAccount = num(r?.with_account);
  const withLicense = num(r?.with_license);
  return { total, with_account: withAccount, with_license: withLicense, account_pct: pct(withAccount, total), license_pct: pct(withLicense, total) };
}

export async function coverage(q: Queryable, tenantId: string, windowStart: string) {
  const p = [tenantId, windowStart];
  const missing = await q.query(
    `SELECT p.slug AS product, f.product_version, f.total, f.missing_account, f.missing_license
       FROM (SELECT product_id, product_version, sum(events) AS total,
                    coalesce(sum(events) FILTER (WHERE account_id = ''), 0) AS missing_account,
                    coalesce(sum(events) FILTER (WHERE license_id = ''), 0) AS missing_license
               FROM rm_usage_days WHERE tenant_id = $1 AND day >= $2::date GROUP BY 1, 2) f
       JOIN products p ON p.id = f.product_id
      WHERE f.missing_account > 0 OR f.missing_license > 0
      ORDER BY f.missing_account + f.missing_license DESC, 1, 2 LIMIT 10`,
    p,
  );
  const [perUser] = await q.query(
    `SELECT count(DISTINCT license_id) AS licenses, count(DISTINCT actor_id) AS actors
       FROM rm_actor_days WHERE tenant_id = $1 AND day >= $2::date AND license_id <> '' AND events > 0`,
    p,
  );
  const shared = await q.query(
    `SELECT license_id, count(DISTINCT account_id) AS accounts FROM rm_usage_days
      WHERE tenant_id = $1 AND day >= $2::date AND license_id <> '' AND account_id <> '' AND events > 0
      GROUP BY license_id HAVING count(DISTINCT account_id) > 1 ORDER BY 2 DESC, 1 LIMIT 20`,
    p,
  );
  const crowded = await q.query(
    `SELECT account_id, count(DISTINCT license_id) AS licenses FROM rm_usage_days
      WHERE tenant_id = $1 AND day >= $2::date AND license_id <> '' AND account_id <> '' AND events > 0
      GROUP BY account_id HAVING count(DISTINCT license_id) > $3 ORDER BY 2 DESC, 1 LIMIT 20`,
    [...p, PER_ACCOUNT_LICENSE_LIMIT],
  );

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
    events: await shares(q, 'events', tenantId, windowStart),
    sessions: await shares(q, 'sessions', tenantId, windowStart),
    exceptions: await shares(q, 'exceptions', tenantId, windowStart),
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
