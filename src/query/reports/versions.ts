import { Type, type Static } from 'typebox';
import { validationError } from '../../errors.js';
import { pickLatest } from '../../domain/version-selector.js';
import type { Queryable } from '../../storage/db.js';
import { iso } from '../../storage/rows.js';
import { allVersions } from '../../storage/versions.js';
import { ACTOR, checkBuckets, FilterProps, rawEvents, resolveFilters, usageDaysWhere, withCompare, type Filters, type Principal } from '../filters.js';
import { DAY_MS, isoDay, localDate, plusDays, type Ymd } from '../scope.js';
import { actorDaysAnswer, localActorDays, localActorMonths, UTC_ZONES, wholeLocalDays } from './actor-days.js';
import { requireAccountAnswers, seesAccounts } from '../guard.js';
import { bucketIndex, bucketLabels, bucketStart, eachWordBit, wordsText } from './buckets.js';
import { Params } from '../params.js';

// Versions of one product (docs/reports.md): adoption over time (actors per version per interval,
// an actor counted under the version it ended each day on), the share of the range's actors on
// the latest version at their last activity, and, for callers who may see accounts, how many days
// accounts took to first run each version after its release, and the accounts whose last
// activity in the range was on an archived version.

export const VersionsQuery = Type.Object(FilterProps);

/** (day, actor, version, account) per active actor-day: the read model's days in the zone (actor-days.ts), or raw events. */
function actorVersionDays(f: Filters, sql: Params): { sql: string; source: 'read_model' | 'events' } {
  const s = f.scope;
  const first = localDate(s.from, s.tz);
  const last = localDate(new Date(s.to.getTime() - 1), s.tz);
  if (actorDaysAnswer(f, first, last)) {
    // A UTC day split across two local days keeps its last version for both (the read model's grain).
    return { source: 'read_model', sql: localActorDays(f, sql, first, last, 'a.lday AS day, a.actor_id AS actor, a.version, a.account_id, a.last_seen') };
  }
  const tz = sql.add(s.tz);
  return {
    source: 'events',
    sql: `SELECT DISTINCT ON (1, 2) day, actor, version, account_id, last_seen FROM (${rawEvents(
      f,
      sql,
      `(e.occurred_at AT TIME ZONE ${tz})::date AS day, ${ACTOR} AS actor, e.product_version AS version, coalesce(e.account_id, '') AS account_id, e.occurred_at AS last_seen`,
    )}) x ORDER BY 1, 2, last_seen DESC`,
  };
}

export async function versionsReport(q: Queryable, principal: Principal, p: Static<typeof VersionsQuery>, now: Date) {
  if (p.product === undefined) throw validationError([{ field: 'product', message: 'the versions report is per product' }]);
  const f = await resolveFilters(q, principal, p, now);
  // Adoption counts actors per local day, week or month (from actor days); an hour would be answered per day.
  if (f.scope.interval === 'hour') throw validationError([{ field: 'interval', message: 'versions are counted per day, week or month' }]);
  checkBuckets(f.scope);
  const accounts = seesAccounts(principal);
  return withCompare(q, f, true, (g) => versionsOf(q, g, accounts));
}

async function versionsOf(q: Queryable, f: Filters, accounts: boolean) {
  const s = f.scope;
  if (s.empty || !s.productId)
    return { latest_version: null, share_on_latest: null, adoption: [], upgrade_lag: accounts ? [] : null, archived_accounts: accounts ? [] : null };
  const versions = await allVersions(q, s.tenantId, s.productId);
  const latest = pickLatest(versions)?.product_version ?? null;
  const sql = new Params();
  const avd = actorVersionDays(f, sql);
  const i = s.interval as 'day' | 'week' | 'month'; // versionsReport refuses hour
  const archived = versions.filter((v) => v.status === 'archived').map((v) => v.product_version);
  // One pass over the actor days, grouped by (actor, version, account): each group's buckets (up to
  // 63: a bigint's bits, else an array of them) and its last activity. Adoption counts the (actor,
  // version) masks per bucket (as trends does); an actor's (an account's) last version is that of
  // its group with the latest activity: a row's last_seen grows with its day, in any zone. Without
  // the archived-accounts part, groups are per (actor, version): adoption then reads them as they
  // are (merging 554k groups into 503k cost 0.5–0.75 s of 2.4–3 s on bench:queries). An account's
  // last version: its latest activity by hashing (one row per account), then the groups at that
  // instant, the greater version in C order at a tie (a DISTINCT ON sorted the 842k groups with an
  // account: 1.39 s → 0.53 s of a 30-day request at 10M events, the same answer).
  const perAccount = accounts && archived.length > 0;
  const account = perAccount ? 'account_id' : `''::text AS account_id`;
  const key = perAccount ? '1, 2, 3' : '1, 2';
  const first = localDate(s.from, s.tz);
  const index = bucketIndex(i, first, localDate(new Date(s.to.getTime() - 1), s.tz), sql);
  const groups = index
    ? `SELECT actor, version, ${account}, bit_or(1::bigint << ${index.of('day')}) AS mask, NULL::timestamp[] AS bs, max(last_seen) AS ls FROM avd GROUP BY ${key}`
    : `SELECT actor, version, ${account}, 0::bigint AS mask, array_agg(DISTINCT date_trunc('${i}', day::timestamp)) AS bs, max(last_seen) AS ls FROM avd GROUP BY ${key}`;
  const actorVersions = perAccount ? '(SELECT actor, version, bit_or(mask) AS mask FROM g GROUP BY 1, 2)' : 'g';
  const adoption = index
    ? `SELECT 'adoption' AS part, to_char(${index.bucket('(u.i - 1)::int')}, 'YYYY-MM-DD') AS a, z.version AS b, u.n, 0 AS m, NULL::timestamptz AS t
         FROM (SELECT version, ${index.sums('mask', 'c')} AS s
                 FROM (SELECT version, mask, count(*) AS c FROM ${actorVersions} x GROUP BY 1, 2) y GROUP BY version) z
        CROSS JOIN LATERAL unnest(z.s) WITH ORDINALITY u(n, i) WHERE u.n IS NOT NULL`
    : `SELECT 'adoption' AS part, to_char(b, 'YYYY-MM-DD') AS a, version AS b, count(DISTINCT actor) AS n, 0 AS m, NULL::timestamptz AS t
         FROM g CROSS JOIN LATERAL unnest(g.bs) b GROUP BY b, version`;
  // The upgrade lag (all time, not the range's) goes out with the adoption's statement (on a
  // PostgreSQL server each on a connection of its own), not after it.
  const [rows, lag] = await Promise.all([
    q.query<{ part: string; a: string; b: string; n: string; m: string; t: Date | null }>(
      `WITH avd AS (${avd.sql}),
          g AS MATERIALIZED (${groups}),
          -- Per actor, its last activity and its last on the latest version: on the latest when they are
          -- the same (a hash aggregate; DISTINCT ON sorted every group, 1.2 s for 554k on bench:queries).
          last AS (SELECT max(ls) AS ls, max(ls) FILTER (WHERE version = ${sql.add(latest)}) AS on_latest FROM g GROUP BY actor)
     ${adoption}
     UNION ALL SELECT 'latest', '', '', count(*), count(*) FILTER (WHERE on_latest = ls), NULL FROM last
     ${
       perAccount
         ? `UNION ALL SELECT 'archived', account_id, version, count(DISTINCT actor), 0, max(ls) FROM (
              SELECT g.account_id, max(g.version COLLATE "C") AS version
                FROM (SELECT account_id, max(ls) AS ls FROM g WHERE account_id <> '' GROUP BY 1) la JOIN g ON g.account_id = la.account_id AND g.ls = la.ls
               GROUP BY 1) lv
              JOIN g USING (account_id, version)
             WHERE version = ANY(${sql.add(archived)}::text[])
             GROUP BY account_id, version`
         : ''
     }`,
      sql.values,
    ),
    accounts ? upgradeLag(q, s.tenantId, s.productId, versions) : null,
  ]);
  const latestRow = rows.find((r) => r.part === 'latest');
  const all = Number(latestRow?.n ?? 0);
  return {
    latest_version: latest,
    share_on_latest: latest === null || all === 0 ? null : Math.round((Number(latestRow!.m) / all) * 1_000_000) / 10_000,
    adoption: rows
      .filter((r) => r.part === 'adoption')
      .map((r) => ({ date: r.a, version: r.b, actors: Number(r.n) }))
      .sort((x, y) => x.date.localeCompare(y.date) || y.actors - x.actors || x.version.localeCompare(y.version)),
    upgrade_lag: lag,
    archived_accounts: accounts
      ? rows
          .filter((r) => r.part === 'archived')
          .map((r) => ({ account_id: r.a, version: r.b, actors: Number(r.n), last_seen: iso(r.t) }))
          .sort((x, y) => (x.account_id < y.account_id ? -1 : x.account_id > y.account_id ? 1 : 0))
      : null,
  };
}

/**
 * Per version: its release (release_date, else first seen), and the days each account took to first
 * run it (its first UTC day with an event on it, rm_account_version_first: one row per account and
 * version, not every actor day of the product).
 */
async function upgradeLag(
  q: Queryable,
  tenantId: string,
  productId: string,
  versions: { product_version: string; release_date?: unknown; first_seen?: unknown }[],
) {
  const rows = await q.query<{ version: string; released: string | null; accounts: string; p50: number | null; p90: number | null }>(
    `WITH rel AS (SELECT version, coalesce(release_date, (first_seen AT TIME ZONE 'UTC')::date) AS released FROM product_versions WHERE tenant_id = $1 AND product_id = $2),
          firsts AS (SELECT product_version AS version, account_id, day FROM rm_account_version_first WHERE tenant_id = $1 AND product_id = $2)
     SELECT rel.version, rel.released::text AS released, count(f.account_id) AS accounts,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY greatest(f.day - rel.released, 0)) FILTER (WHERE f.account_id IS NOT NULL) AS p50,
            percentile_cont(0.9) WITHIN GROUP (ORDER BY greatest(f.day - rel.released, 0)) FILTER (WHERE f.account_id IS NOT NULL) AS p90
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
  return withCompare(q, f, p.to === undefined, (g, toNow) => accountsOf(q, g, toNow));
}

/** One period's active accounts and licenses; `toNow`: the period ends now (its current day counts whole). */
async function accountsOf(q: Queryable, f: Filters, toNow: boolean) {
  const s = f.scope;
  if (s.empty) return { data: [] };
  const days = s.interval === 'hour' ? undefined : wholeLocalDays(f, toNow);
  const labels = await bucketLabels(q, f);
  if (days) {
    const counted = await accountsFromMonths(q, f, days.first, days.last, s.interval as 'day' | 'week' | 'month', labels);
    if (counted) return { data: counted };
  }
  const sql = new Params();
  // Active: had events. From the read model's actor days (each carries its account and license) when they answer.
  const ev = days
    ? localActorDays(
        f,
        sql,
        days.first,
        days.last,
        `date_trunc('${s.interval}', a.lday::timestamp) AS b, nullif(a.account_id, '') AS a, nullif(a.license_id, '') AS l`,
      )
    : (usageOfVersion(f, sql, toNow) ??
      rawEvents(
        f,
        sql,
        `date_trunc('${s.interval}', e.occurred_at AT TIME ZONE ${sql.add(s.tz)}) AS b, nullif(e.account_id, '') AS a, nullif(e.license_id, '') AS l`,
      ));
  const rows = await q.query<{ date: string; accounts: string; licenses: string }>(
    // Distinct (bucket, account) and (bucket, license) pairs by hashing, then counted per bucket.
    `SELECT to_char(b, ${s.interval === 'hour' ? `'YYYY-MM-DD"T"HH24:00'` : `'YYYY-MM-DD'`}) AS date, count(a) AS accounts, count(l) AS licenses
       FROM (SELECT b, a, l FROM (${ev}) x GROUP BY GROUPING SETS ((b, a), (b, l))) p GROUP BY b ORDER BY b`,
    sql.values,
  );
  const byDate = new Map(rows.map((r) => [r.date, r]));
  return {
    data: labels.map((date) => ({
      date,
      accounts: Number(byDate.get(date)?.accounts ?? 0),
      licenses: Number(byDate.get(date)?.licenses ?? 0),
    })),
  };
}

/**
 * A version filter (and no event-level one) over whole UTC days in UTC: the read model's usage days
 * (per UTC day, account, license, product and version; their deltas summed) say which accounts and
 * licenses had events on the version each day, where actor days keep only a day's last version.
 * Raw events otherwise (at 10M events, a version's month of raw events took 2–4 s).
 */
function usageOfVersion(f: Filters, sql: Params, toNow: boolean): string | undefined {
  const s = f.scope;
  const eventLevel = f.category !== undefined || f.name !== undefined || f.properties.length > 0 || f.segment;
  if (s.version === undefined || eventLevel || !UTC_ZONES.has(s.tz) || s.interval === 'hour') return undefined;
  // A range ending now counts its current day whole.
  const to = toNow ? new Date(Math.ceil(s.to.getTime() / DAY_MS) * DAY_MS) : s.to;
  if (s.from.getTime() % DAY_MS !== 0 || to.getTime() % DAY_MS !== 0) return undefined;
  return `SELECT date_trunc('${s.interval}', day::timestamp) AS b, nullif(account_id, '') AS a, nullif(license_id, '') AS l
            FROM rm_usage_days WHERE ${usageDaysWhere(s, sql, to).join(' AND ')} GROUP BY day, product_id, account_id, license_id HAVING sum(events) > 0`;
}

/**
 * Accounts over time from rm_actor_months: each account's (and license's) active local days of the
 * range as 63-day words, OR'd over its rows by one hash aggregate (one row per actor and month, not
 * per actor day), then counted per bucket here from the distinct masks. Undefined when the zone's
 * local days are not whole UTC hours.
 */
async function accountsFromMonths(q: Queryable, f: Filters, first: Ymd, last: Ymd, interval: 'day' | 'week' | 'month', labels: string[]) {
  const span = (Date.UTC(last.y, last.m - 1, last.d) - Date.UTC(first.y, first.m - 1, first.d)) / DAY_MS + 1;
  const sql = new Params();
  const months = localActorMonths(f, sql, first, last, Math.ceil(span / 63));
  if (!months) return undefined;
  const words = months.words.map((x, w) => `bit_or(${x}) AS w${w}`).join(', ');
  const rows = await q.query<{ kind: 'a' | 'l'; w: string; n: string }>(
    `WITH r AS MATERIALIZED (SELECT a.* FROM ${months.from}),
          m AS (SELECT 'a' AS kind, ${words} FROM r a WHERE a.account_id <> '' GROUP BY a.account_id
                UNION ALL SELECT 'l', ${words} FROM r a WHERE a.license_id <> '' GROUP BY a.license_id)
     SELECT kind, ${wordsText('m', months.words.length)} AS w, count(*) AS n FROM m GROUP BY 1, 2`,
    sql.values,
  );
  const index = new Map(labels.map((b, k) => [b, k]));
  const dayBucket = Array.from({ length: span }, (_, d) => index.get(bucketStart(isoDay(plusDays(first, d)), interval)) ?? -1);
  const counts = { a: new Float64Array(labels.length), l: new Float64Array(labels.length) };
  const hit = new Uint8Array(labels.length);
  for (const r of rows) {
    hit.fill(0);
    eachWordBit(r.w, (d) => {
      const b = dayBucket[d];
      if (b !== undefined && b >= 0) hit[b] = 1;
    });
    hit.forEach((on, b) => on && (counts[r.kind][b]! += Number(r.n)));
  }
  return labels.map((date, b) => ({ date, accounts: counts.a[b]!, licenses: counts.l[b]! }));
}
