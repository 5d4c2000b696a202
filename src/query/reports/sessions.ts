import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { exactTime, iso } from '../../storage/rows.js';
import { SESSION_STATUS_COUNTS } from '../../storage/read-model/tables.js';
import { seesAccounts } from '../guard.js';
import {
  checkBuckets,
  head,
  keysetCursor,
  label,
  recordWhere,
  RecordFilterProps,
  resolveFilters,
  withCompare,
  type Filters,
  type Principal,
} from '../filters.js';
import { pageOf } from '../page.js';
import { wholeHourDays } from './actor-days.js';
import { bucketLabels } from './buckets.js';
import { localDate } from '../scope.js';
import { Params } from '../params.js';
import { healthFromSets, type HealthRow } from './session-sets.js';

// Sessions (docs/reports.md), from the read model's sessions (rm_sessions: status as Sentry's
// release health defines it, the actor after identify, the account a session adopted), counted
// by their start. Duration: ended_at − started_at of ended sessions, in seconds.

const STATUSES = ['healthy', 'errored', 'crashed', 'abnormal', 'open'] as const;
export const SessionListQuery = Type.Object({
  // A list: compare does not apply (as the explorer's and an exception group's occurrences).
  ...(({ compare: _c, ...rest }) => rest)(RecordFilterProps),
  status: Type.Optional(
    Type.Enum([...STATUSES], {
      description: 'crashed: a fatal exception; abnormal: ended by timeout or sdk_recovery; errored: a non-fatal exception; healthy: ended normally',
    }),
  ),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
});
export const SessionStatsQuery = Type.Object(RecordFilterProps);
export const ReleaseHealthQuery = Type.Object(RecordFilterProps);

interface SessionOut {
  session_id: string;
  actor_id: string | null;
  product: string;
  product_version: string | null;
  account_id?: string | null;
  license_id?: string | null;
  started_at: string;
  ended_at: string | null;
  end_reason: string | null;
  duration_s: number | null;
  errors: number;
  status: (typeof STATUSES)[number];
}

const n = (v: unknown) => Number(v ?? 0);
const rate = (bad: number, all: number) => (all === 0 ? null : Math.round((1 - bad / all) * 1_000_000) / 10_000);
/** The started sessions of the filters (alias r), with the day bound that lets the index narrow the scan. */
function where(f: Filters, sql: Params): string {
  const s = f.scope;
  const w = recordWhere(f, sql, 'started_at', 'r');
  w.push(`r.day >= (${sql.add(s.from)}::timestamptz AT TIME ZONE 'UTC')::date`, `r.day <= (${sql.add(s.to)}::timestamptz AT TIME ZONE 'UTC')::date`);
  return w.join(' AND ');
}

export async function listSessions(q: Queryable, principal: Principal, p: Static<typeof SessionListQuery>, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  const before = keysetCursor(p.cursor);
  const limit = p.limit ?? 50;
  if (f.scope.empty) return { ...(await head(q, f.scope)), data: [], next_cursor: null };
  const sql = new Params();
  const w = [where(f, sql)];
  if (p.status) w.push(`r.status = ${sql.add(p.status)}`);
  // Sessions carry the actor after identify: an anonymous id finds its user's sessions, as the explorer's filter does.
  if (p.actor_id) {
    const actor = sql.add(p.actor_id);
    w.push(
      `r.actor_id = coalesce((SELECT k.identified_actor_id FROM actor_links k WHERE k.tenant_id = ${sql.add(f.scope.tenantId)} AND k.anonymous_actor_id = ${actor}), ${actor})`,
    );
  }
  if (before) w.push(`(r.started_at, r.session_id) < (${sql.add(before[0])}::timestamptz, ${sql.add(before[1])})`);
  const rows = await q.query<SessionOut & { started_at: Date; ended_at: Date | null; errors: string; at_key: string }>(
    `SELECT r.session_id, r.actor_id, p.slug AS product, r.product_version, r.account_id, r.license_id, r.started_at, r.ended_at, r.end_reason,
            extract(epoch FROM r.ended_at - r.started_at)::float8 AS duration_s, r.errors, r.status, ${exactTime('r.started_at')} AS at_key
       FROM rm_sessions r JOIN products p ON p.id = r.product_id
      WHERE ${w.join(' AND ')} ORDER BY r.started_at DESC, r.session_id DESC LIMIT ${sql.add(limit + 1)}`,
    sql.values,
  );
  const paged = pageOf(rows, limit, (r) => [r.at_key, r.session_id]);
  const accounts = seesAccounts(principal);
  const data: SessionOut[] = paged.data.map(({ at_key: _k, account_id, license_id, ...r }) => ({
    ...r,
    ...(accounts ? { account_id, license_id } : {}),
    started_at: iso(r.started_at)!,
    ended_at: iso(r.ended_at),
    errors: n(r.errors),
  }));
  return { ...(await head(q, f.scope)), data, next_cursor: paged.next_cursor };
}

export async function sessionStats(q: Queryable, principal: Principal, p: Static<typeof SessionStatsQuery>, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  return withCompare(q, f, true, (g) => stats(q, g));
}

async function stats(q: Queryable, f: Filters) {
  const statuses = (counts: Record<string, number>) =>
    Object.fromEntries(STATUSES.map((s) => [s, counts[s] ?? 0])) as Record<(typeof STATUSES)[number], number>;
  if (f.scope.empty) {
    const zero = { sessions: 0, duration_s: { p50: null, p90: null, p99: null }, end_reasons: {}, statuses: statuses({}) };
    return { ...zero, data: (await bucketLabels(q, f)).map((date) => ({ date, sessions: 0 })) };
  }
  // The statements go out together (each with its own parameters): on a PostgreSQL server each
  // gets a connection of the pool, so the answer waits for the slowest read of the range, not for
  // both (190 → 130 ms p95 over 200k sessions, docs/benchmarks.md); the embedded store runs them
  // one after the other, as before.
  const one = new Params();
  const all = new Params();
  const quarters = wholeHourDays(f.scope.tz, localDate(f.scope.from, f.scope.tz), localDate(new Date(f.scope.to.getTime() - 1), f.scope.tz), 900_000);
  const [labels, [totals], groups] = await Promise.all([
    bucketLabels(q, f),
    // date_part, a float8: extract answers numeric (PostgreSQL 14 on), whose sort cost 280 → 165 ms over 195k sessions.
    q.query<{ sessions: string; d: number[] | null }>(
      `SELECT count(*) AS sessions,
              percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY date_part('epoch', r.ended_at - r.started_at)) FILTER (WHERE r.ended_at IS NOT NULL) AS d
         FROM rm_sessions r WHERE ${where(f, one)}`,
      one.values,
    ),
    // The three counts in one read of the range: grouping sets hash each (reason, status, bucket) at
    // once, and a bucket's label is written per bucket, not per session (to_char per row cost more
    // than the rest of the read: 350 → 170 ms over 195k sessions). Where every bucket starts on a
    // UTC quarter hour (the zone's offsets are whole quarter hours, as all are today), sessions are
    // first counted per quarter hour, and only those few thousand rows are put into the zone
    // (AT TIME ZONE per session: 130 → 95 ms over 200k sessions; p95 of the report 130 → 91 ms).
    q.query<{ kind: string; k: string; n: string }>(
      `SELECT CASE WHEN grouping(reason) = 0 THEN 'reason' WHEN grouping(status) = 0 THEN 'status' ELSE 'bucket' END AS kind,
              CASE WHEN grouping(reason) = 0 THEN reason WHEN grouping(status) = 0 THEN status ELSE ${label('bucket', f.scope)} END AS k, sum(n) AS n
         FROM (SELECT reason, status, date_trunc('${f.scope.interval}', ${quarters ? 'to_timestamp(u * 900)' : 'u'} AT TIME ZONE ${all.add(f.scope.tz)}) AS bucket, n
                 FROM (SELECT coalesce(r.end_reason, 'open') AS reason, r.status, ${
                   quarters ? `floor(date_part('epoch', r.started_at) / 900) AS u, count(*) AS n` : 'r.started_at AS u, 1 AS n'
                 }
                         FROM rm_sessions r WHERE ${where(f, all)}${quarters ? ' GROUP BY 1, 2, 3' : ''}) g) x
        GROUP BY GROUPING SETS ((reason), (status), (bucket))`,
      all.values,
    ),
  ]);
  const of = (kind: string) => Object.fromEntries(groups.filter((g) => g.kind === kind).map((g) => [g.k, n(g.n)]));
  const buckets = of('bucket');
  const d = totals?.d ?? null;
  const round = (v: number | null | undefined): number | null => (v === undefined || v === null ? null : Math.round(v * 1000) / 1000);
  return {
    sessions: n(totals?.sessions),
    duration_s: { p50: round(d?.[0]), p90: round(d?.[1]), p99: round(d?.[2]) },
    end_reasons: of('reason'),
    statuses: statuses(of('status')),
    data: labels.map((date) => ({ date, sessions: buckets[date] ?? 0 })),
  };
}

/**
 * Release health per (product, version), as Sentry defines it: crash-free sessions = 1 − crashed
 * sessions / sessions; crash-free actors = 1 − actors with a crashed session / actors with a
 * session; adoption = the version's share of the range's sessions and of its actors.
 */
export async function releaseHealth(q: Queryable, principal: Principal, p: Static<typeof ReleaseHealthQuery>, now: Date) {
  return withCompare(q, await resolveFilters(q, principal, p, now), true, (f) => health(q, f));
}

async function health(q: Queryable, f: Filters) {
  if (f.scope.empty) return { data: [] };
  // Without an account or license filter, from the sets of actors the rollup job keeps (session-sets.ts).
  const sets = f.scope.accountId === undefined && f.scope.licenseId === undefined;
  const { rows, totals } = sets ? await healthFromSets(q, f, where) : await healthFromRows(q, f);
  const allSessions = n(totals?.sessions);
  const allActors = n(totals?.actors);
  return {
    data: rows.map((r) => ({
      product: r.product,
      product_version: r.product_version,
      sessions: n(r.sessions),
      actors: n(r.actors),
      crashed_sessions: n(r.crashed),
      errored_sessions: n(r.errored),
      abnormal_sessions: n(r.abnormal),
      healthy_sessions: n(r.healthy),
      crashed_actors: n(r.crashed_actors),
      crash_free_sessions: rate(n(r.crashed), n(r.sessions)),
      crash_free_actors: rate(n(r.crashed_actors), n(r.actors)),
      adoption: { sessions: rate(allSessions - n(r.sessions), allSessions), actors: rate(allActors - n(r.actors), allActors) },
    })),
  };
}

/** Release health from rm_sessions' rows: under an account or license filter (the sets carry neither). */
async function healthFromRows(q: Queryable, f: Filters): Promise<{ rows: HealthRow[]; totals: { sessions: string; actors: string } | undefined }> {
  // Two statements, sent together (as session stats'): per version, its sessions by status and
  // its distinct actors, each (actor, version) hashed once and then summed per version (a
  // count(DISTINCT) per version sorted every group's actors, twice: 260 → 205 ms over 200k
  // sessions); and the range's sessions and distinct actors, hashed by actor (50 ms), the
  // denominators of adoption: with a version filter, of every version (a version's share of its
  // own sessions would be 100 %). Grouped by product id, the slug joined to the twenty-odd rows after.
  const one = new Params();
  const all = new Params();
  const everyVersion: Filters = { ...f, scope: { ...f.scope, version: undefined } };
  const [rows, [totals]] = await Promise.all([
    q.query<HealthRow>(
      `WITH a AS (SELECT r.product_id, r.product_version, r.actor_id, count(*) AS sessions, ${SESSION_STATUS_COUNTS}
                    FROM rm_sessions r WHERE ${where(f, one)} GROUP BY 1, 2, 3),
            v AS (SELECT product_id, product_version, sum(sessions) AS sessions, count(actor_id) AS actors, sum(crashed) AS crashed,
                         sum(errored) AS errored, sum(abnormal) AS abnormal, sum(healthy) AS healthy, count(actor_id) FILTER (WHERE crashed > 0) AS crashed_actors
                    FROM a GROUP BY 1, 2)
       SELECT p.slug AS product, v.product_version, v.sessions, v.actors, v.crashed, v.errored, v.abnormal, v.healthy, v.crashed_actors
         FROM v JOIN products p ON p.id = v.product_id
        ORDER BY v.sessions DESC, v.product_version`,
      one.values,
    ),
    q.query<{ sessions: string; actors: string }>(
      `SELECT sum(n) AS sessions, count(actor_id) AS actors FROM (SELECT r.actor_id, count(*) AS n FROM rm_sessions r WHERE ${where(everyVersion, all)} GROUP BY r.actor_id) x`,
      all.values,
    ),
  ]);
  return { rows, totals };
}
