import { Type, type Static } from 'typebox';
import { validationError } from '../../errors.js';
import { pickLatest } from '../../domain/version-selector.js';
import type { Queryable } from '../../storage/db.js';
import { iso } from '../../storage/rows.js';
import { allVersions } from '../../storage/versions.js';
import {
  ACTOR,
  checkBuckets,
  FilterProps,
  head,
  Params,
  rawEvents,
  requireAccountAnswers,
  resolveFilters,
  segmentWhere,
  type Filters,
  type Principal,
} from '../filters.js';
import { seesAccounts } from './events.js';
import { bucketLabels } from './trends.js';

// Versions of one product (docs/reports.md): adoption over time (actors per version per interval,
// an actor counted under the version it ended each day on), the share of the range's actors on
// the latest version at their last activity, and, for callers who may see accounts, how many days
// accounts took to first run each version after its release, and the accounts whose last
// activity in the range was on an archived version.

export const VersionsQuery = Type.Object(FilterProps);
const UTC = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);

/** (day, actor, version, account) per active actor-day: the read model's UTC days, or raw events in local days. */
function actorVersionDays(f: Filters, sql: Params): string {
  const s = f.scope;
  if (UTC.has(s.tz) && f.category === undefined && f.name === undefined && f.properties.length === 0 && s.version === undefined) {
    const w = [
      `tenant_id = ${sql.p(s.tenantId)}`,
      `day >= (${sql.p(s.from)}::timestamptz AT TIME ZONE 'UTC')::date`,
      `day < (${sql.p(s.to)}::timestamptz AT TIME ZONE 'UTC')::date + 1`,
      'events > 0',
      `product_id = ${sql.p(s.productId)}`,
    ];
    if (s.accountId !== undefined) w.push(`account_id = ${sql.p(s.accountId)}`);
    if (s.licenseId !== undefined) w.push(`license_id = ${sql.p(s.licenseId)}`);
    w.push(segmentWhere(f, sql, 'actor_id'));
    return `SELECT day, actor_id AS actor, version, account_id, last_seen FROM rm_actor_days WHERE ${w.join(' AND ')}`;
  }
  const tz = sql.p(s.tz);
  return `SELECT DISTINCT ON (1, 2) day, actor, version, account_id, last_seen FROM (${rawEvents(
    f,
    sql,
    `(e.occurred_at AT TIME ZONE ${tz})::date AS day, ${ACTOR} AS actor, e.product_version AS version, coalesce(e.account_id, '') AS account_id, e.occurred_at AS last_seen`,
  )}) x ORDER BY 1, 2, last_seen DESC`;
}

export async function versionsReport(q: Queryable, principal: Principal, p: Static<typeof VersionsQuery>, now: Date) {
  if (p.product === undefined) throw validationError([{ field: 'product', message: 'the versions report is per product' }]);
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  const s = f.scope;
  const h = await head(q, s);
  const accounts = seesAccounts(principal);
  if (s.empty || !s.productId)
    return { ...h, latest_version: null, share_on_latest: null, adoption: [], upgrade_lag: accounts ? [] : null, archived_accounts: accounts ? [] : null };
  const versions = await allVersions(q, s.tenantId, s.productId);
  const latest = pickLatest(versions)?.product_version ?? null;
  const sql = new Params();
  const avd = actorVersionDays(f, sql);
  const i = s.interval === 'hour' ? 'day' : s.interval;
  const rows = await q.query<{ part: string; a: string; b: string; n: string; m: string; t: Date | null }>(
    `WITH avd AS MATERIALIZED (${avd}),
          last AS (SELECT DISTINCT ON (actor) actor, version FROM avd ORDER BY actor, day DESC, last_seen DESC)
     SELECT 'adoption' AS part, to_char(date_trunc('${i}', day::timestamp), 'YYYY-MM-DD') AS a, version AS b, count(DISTINCT actor) AS n, 0 AS m, NULL::timestamptz AS t FROM avd GROUP BY 2, 3
     UNION ALL SELECT 'latest', '', '', count(*), count(*) FILTER (WHERE version = ${sql.p(latest)}), NULL FROM last
     UNION ALL SELECT 'archived', account_id, version, count(DISTINCT actor), 0, max(last_seen) FROM (
       SELECT DISTINCT ON (account_id) account_id, version FROM avd WHERE account_id <> '' ORDER BY account_id, day DESC, last_seen DESC) la
       JOIN avd USING (account_id, version)
      WHERE version IN (SELECT version FROM product_versions WHERE tenant_id = ${sql.p(s.tenantId)} AND product_id = ${sql.p(s.productId)} AND status = 'archived') AND ${accounts ? 'true' : 'false'}
      GROUP BY account_id, version`,
    sql.values,
  );
  const latestRow = rows.find((r) => r.part === 'latest');
  const all = Number(latestRow?.n ?? 0);
  return {
    ...h,
    latest_version: latest,
    share_on_latest: latest === null || all === 0 ? null : Math.round((Number(latestRow!.m) / all) * 1_000_000) / 10_000,
    adoption: rows
      .filter((r) => r.part === 'adoption')
      .map((r) => ({ date: r.a, version: r.b, actors: Number(r.n) }))
      .sort((x, y) => x.date.localeCompare(y.date) || y.actors - x.actors || x.version.localeCompare(y.version)),
    upgrade_lag: accounts ? await upgradeLag(q, s.tenantId, s.productId, versions) : null,
    archived_accounts: accounts
      ? rows.filter((r) => r.part === 'archived').map((r) => ({ account_id: r.a, version: r.b, actors: Number(r.n), last_seen: iso(r.t) }))
      : null,
  };
}

/** Per version: its release (release_date, else first seen), and the days each account took to first run it (UTC days). */
async function upgradeLag(
  q: Queryable,
  tenantId: string,
  productId: string,
  versions: { product_version: string; release_date?: unknown; first_seen?: unknown }[],
) {
  const rows = await q.query<{ version: string; released: string | null; accounts: string; p50: number | null; p90: number | null }>(
    `WITH rel AS (SELECT version, coalesce(release_date, (first_seen AT TIME ZONE 'UTC')::date) AS released FROM product_versions WHERE tenant_id = $1 AND product_id = $2),
          firsts AS (SELECT version, account_id, min(day) AS day FROM rm_actor_days WHERE tenant_id = $1 AND product_id = $2 AND account_id <> '' AND events > 0 GROUP BY 1, 2)
     SELECT rel.version, rel.released::text AS released, count(f.account_id) AS accounts,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY greatest(f.day - rel.released, 0)) AS p50,
            percentile_cont(0.9) WITHIN GROUP (ORDER BY greatest(f.day - rel.released, 0)) AS p90
       FROM rel LEFT JOIN firsts f ON f.version = rel.version GROUP BY 1, 2`,
    [tenantId, productId],
  );
  const order = new Map(versions.map((v, n) => [v.product_version, n]));
  return rows
    .sort((a, b) => (order.get(b.version) ?? 0) - (order.get(a.version) ?? 0))
    .map((r) => ({
      version: r.version,
      released_on: r.released,
      accounts: Number(r.accounts),
      median_lag_days: r.p50 === null ? null : Number(r.p50),
      p90_lag_days: r.p90 === null ? null : Number(r.p90),
    }));
}

export const AccountsOverTimeQuery = Type.Object(FilterProps);

/** Active accounts and licenses per interval (had events), for the account plans. */
export async function accountsOverTime(q: Queryable, principal: Principal, p: Static<typeof AccountsOverTimeQuery>, now: Date) {
  requireAccountAnswers(principal);
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  const s = f.scope;
  const h = await head(q, s);
  if (s.empty) return { ...h, data: [] };
  const sql = new Params();
  const tz = sql.p(s.tz);
  const ev = rawEvents(
    f,
    sql,
    `date_trunc('${s.interval}', e.occurred_at AT TIME ZONE ${tz}) AS b, nullif(e.account_id, '') AS a, nullif(e.license_id, '') AS l`,
  );
  const rows = await q.query<{ date: string; accounts: string; licenses: string }>(
    `SELECT to_char(b, ${s.interval === 'hour' ? `'YYYY-MM-DD"T"HH24:00'` : `'YYYY-MM-DD'`}) AS date, count(DISTINCT a) AS accounts, count(DISTINCT l) AS licenses FROM (${ev}) x GROUP BY b ORDER BY b`,
    sql.values,
  );
  const byDate = new Map(rows.map((r) => [r.date, r]));
  return {
    ...h,
    data: (await bucketLabels(q, f)).map((date) => ({
      date,
      accounts: Number(byDate.get(date)?.accounts ?? 0),
      licenses: Number(byDate.get(date)?.licenses ?? 0),
    })),
  };
}
