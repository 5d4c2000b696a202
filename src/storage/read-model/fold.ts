import type { ScriptStatement } from '../db.js';
import { MONTH_HOURS, MONTH_KEY } from './tables.js';

// The read model's fold (docs/read-model.md): the rows of one slice of transaction ids into the
// derived tables, inside the slice's transaction, so that each row is folded exactly once. The
// hot tables take insert-only deltas, pre-aggregated per slice (a slice of 100k events writes a few
// thousand rows, with no ON CONFLICT probe); compaction (compact.ts) merges a day's deltas later.
// Rows by account and license go in in that order, as compaction writes them: a day one fold wrote
// is then left as it is. Text sort keys are in C order (byte order, abbreviated keys): any one order
// keeps an account's rows together, and the database's own collation compares through the C library.
// Each source table is read once per slice, into a MATERIALIZED CTE that every insert shares.

// Every arm carries a range of the xid, so that each can use the BRIN index; $5 and $6 bound the resolved xids.
const inSlice = (col: string) =>
  `((${col} >= $1 AND ${col} < $2 AND ${col} <> ALL($3::bigint[])) OR (${col} >= $5 AND ${col} <= $6 AND ${col} = ANY($4::bigint[])))`;
const utcDay = (col: string) => `((${col} AT TIME ZONE 'UTC')::date)`;
const utcHour = (col: string) => `(date_trunc('hour', ${col} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;
/** The identified actor an id resolves to (one level: links never chain). */
const resolved = (alias: string, actor: string) =>
  `coalesce((SELECT k.identified_actor_id FROM actor_links k WHERE k.tenant_id = ${alias}.tenant_id AND k.anonymous_actor_id = ${actor}), ${actor})`;
/**
 * The days a statement wrote deltas to, counted once per slice (the slice is named by its end, $2),
 * and its tenants marked for a snapshot refresh (rollup_dirty), in the slice's transaction.
 */
const due = (from: string) => `due AS (
    INSERT INTO rm_compaction_due (tenant_id, day, folds, slice) SELECT DISTINCT tenant_id, day, 1, $2::bigint FROM ${from}
    ON CONFLICT (tenant_id, day) DO UPDATE SET folds = rm_compaction_due.folds + 1, slice = excluded.slice WHERE rm_compaction_due.slice <> excluded.slice),
  dirty AS (INSERT INTO rollup_dirty (tenant_id) SELECT DISTINCT tenant_id FROM ${from} ON CONFLICT DO NOTHING)`;

/**
 * The fold of one slice, as statements of the fold step's script (rollups.ts's foldStep): the
 * slice's identify links, events, sessions and exceptions into the derived tables. `slice` holds
 * its six parameters: [from, to) minus `skip`, plus `resolved` (earlier pending xids that have
 * ended), and resolved's least and greatest (so that every arm can use the BRIN index). The
 * statement named `events` answers the slice's number of events (what the job sizes slices by).
 *
 * The slice is grouped by hashing, in memory: the planner cannot know how few distinct
 * combinations a slice has (1M events of a real product are a few thousand), and a sort of the
 * whole slice, spilled to disk at the default 4 MB, cost four times the rest of the fold. And the
 * slice's CTEs are joined by hashing too: a slice's transaction ids lie past the statistics'
 * histogram, so the planner expects one row from it and would join its CTEs in nested loops, which
 * on 100k events of 50k actors compare billions of pairs (the fold that "never finished"). Those
 * settings last until the step's transaction ends.
 */
export function foldStatements(slice: unknown[]): ScriptStatement[] {
  return [
    { sql: "SELECT set_config('enable_sort', 'off', true), set_config('enable_nestloop', 'off', true), set_config('work_mem', '64MB', true)" },
    { sql: LINKS_ACTOR_DAYS, params: slice },
    ...LINKS_OTHERS.map((sql) => ({ sql, params: slice })),
    { sql: EVENTS, params: slice, name: 'events' },
    { sql: SESSION_STARTS, params: slice },
    { sql: SESSION_CHANGES, params: slice },
    { sql: EXCEPTIONS, params: slice },
  ];
}

// One read of the slice's events, grouped at the finest grain any derived table needs (hour, product,
// version, name, actor, session, account, license): a hash aggregate that shrinks the slice to the
// number of distinct combinations before anything is sorted or written. Every table is built from it.
const EVENTS = `
  WITH n AS MATERIALIZED (
    SELECT x.*, (hour AT TIME ZONE 'UTC')::date AS day FROM (
      SELECT tenant_id, ${utcHour('occurred_at')} AS hour, product_id, product_version AS version, category, name, actor_id, session_id,
             coalesce(account_id, '') AS account_id, coalesce(license_id, '') AS license_id,
             count(*) AS events, min(occurred_at) AS first_seen, max(occurred_at) AS last_seen
        FROM events WHERE ${inSlice('ingest_xid')} GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10) x),
  ids AS MATERIALIZED (
    SELECT a.tenant_id, a.actor_id, ${resolved('a', 'a.actor_id')} AS actor, env.os, env.runtime, env.locale
      FROM (SELECT DISTINCT tenant_id, actor_id FROM n) a LEFT JOIN LATERAL (
        SELECT coalesce(data->>'os_name', data->>'os') AS os, data->>'runtime' AS runtime, data->>'locale' AS locale
          FROM environments e WHERE e.tenant_id = a.tenant_id AND e.actor_id = a.actor_id ORDER BY received_at DESC LIMIT 1) env ON true),
  hours AS (
    INSERT INTO rm_event_hours (tenant_id, hour, product_id, product_version, category, name, events, first_seen, last_seen)
    SELECT tenant_id, hour, product_id, version, category, name, sum(events), min(first_seen), max(last_seen) FROM n GROUP BY 1, 2, 3, 4, 5, 6),
  -- Grouped by hashing first (MATERIALIZED: a fence), then ordered: written in one query, the
  -- planner sorted the whole slice once to group and order alike (10M rows of bench:queries, three times).
  u AS MATERIALIZED (
    SELECT tenant_id, day, account_id, license_id, product_id, version, sum(events) AS events, min(first_seen) AS first_seen, max(last_seen) AS last_seen
      FROM n GROUP BY 1, 2, 3, 4, 5, 6),
  usage AS (
    INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, events, first_seen, last_seen)
    SELECT * FROM u ORDER BY account_id COLLATE "C", license_id COLLATE "C"),
  -- Each account's first day on a version (the versions report's upgrade lag): written only when
  -- it moves earlier, so a conflict costs a probe, not a row version.
  version_firsts AS (
    INSERT INTO rm_account_version_first (tenant_id, product_id, product_version, account_id, day)
    SELECT tenant_id, product_id, version, account_id, min(day) FROM u WHERE account_id <> '' GROUP BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, product_id, product_version, account_id) DO UPDATE SET day = excluded.day
     WHERE excluded.day < rm_account_version_first.day),
  f AS MATERIALIZED (
    SELECT tenant_id, day, account_id, product_id, category, name, sum(events) AS events, min(first_seen) AS first_seen, max(last_seen) AS last_seen
      FROM n GROUP BY 1, 2, 3, 4, 5, 6),
  features AS (
    INSERT INTO rm_feature_days (tenant_id, day, account_id, product_id, category, name, events, first_seen, last_seen)
    SELECT * FROM f ORDER BY account_id COLLATE "C"),
  -- The actor days, hashed straight from the slice's rows. The day's last version is the greatest
  -- (microsecond of the UTC day, version) as one text key in C order, so no aggregate is ordered:
  -- an ordered aggregate cannot hash, and sorting the slice's rows by actor day to feed one took a
  -- fifth of a 10M-event fold. A version at a tie of microseconds: the greater in C order.
  g AS (
    SELECT tenant_id, day, actor_id, product_id, account_id, license_id, sum(events) AS events, min(first_seen) AS first_seen, max(last_seen) AS last_seen,
           substr(max(lpad(round(date_part('epoch', (last_seen AT TIME ZONE 'UTC')::time) * 1e6)::bigint::text, 11, '0') || version COLLATE "C"), 12) AS version,
           bit_or(1 << date_part('hour', hour AT TIME ZONE 'UTC')::int) AS hours
      FROM n GROUP BY 1, 2, 3, 4, 5, 6),
  -- The actor days with their resolved actor and environment: joined once, read by the three tables below.
  ga AS MATERIALIZED (
    SELECT g.tenant_id, g.day, i.actor, g.product_id, g.account_id, g.license_id, g.version, g.events, g.first_seen, g.last_seen, g.hours, i.os, i.runtime, i.locale
      FROM g JOIN ids i ON i.tenant_id = g.tenant_id AND i.actor_id = g.actor_id),
  days AS (
    INSERT INTO rm_actor_days (tenant_id, day, actor_id, product_id, account_id, license_id, version, events, crashed, os, runtime, locale, first_seen, last_seen, hours)
    SELECT tenant_id, day, actor, product_id, account_id, license_id, version, events, false, os, runtime, locale, first_seen, last_seen, hours FROM ga
     ORDER BY account_id COLLATE "C", license_id COLLATE "C"),
  -- The same actor days as month masks: hour k of day d sets bit d − 1 of hk (a key's several rows are OR'd by readers and merged by the rollup job).
  -- A key that has no row yet goes in merged: there is nothing to merge it with, and a merge would
  -- only write it again (a first fold's table then holds its rows once, not twice). Probed per row
  -- through the key's index (a subquery, not a join: the fold's settings leave joins to hashing,
  -- which would read the whole table). Written in month and actor order, as a merge writes its
  -- keys: readers hash a month range's rows by actor (a 12-week retention on 10M events took 10 %
  -- longer on the same rows unordered).
  months AS (
    INSERT INTO rm_actor_months (tenant_id, month, actor_id, product_id, account_id, license_id, ${MONTH_HOURS.join(', ')}, merged)
    SELECT m.*, (SELECT true FROM rm_actor_months r WHERE ${MONTH_KEY.map((c) => `r.${c} = m.${c}`).join(' AND ')} LIMIT 1) IS NULL
      FROM (SELECT tenant_id, date_trunc('month', day)::date AS month, actor AS actor_id, product_id, account_id, license_id,
                   ${MONTH_HOURS.map((h, k) => `bit_or(bit * (hours >> ${k} & 1)) AS ${h}`).join(', ')}
              FROM (SELECT ga.*, 1 << (extract(day FROM ga.day)::int - 1) AS bit FROM ga) g
             GROUP BY 1, 2, 3, 4, 5, 6) m
     ORDER BY m.month, m.actor_id COLLATE "C"),
  firsts AS (
    INSERT INTO rm_actor_first (tenant_id, actor_id, product_id, first_seen)
    SELECT DISTINCT ON (tenant_id, actor COLLATE "C") tenant_id, actor, product_id, first_seen FROM ga ORDER BY tenant_id, actor COLLATE "C", first_seen
    ON CONFLICT (tenant_id, actor_id) DO UPDATE SET first_seen = excluded.first_seen, product_id = excluded.product_id
     WHERE excluded.first_seen < rm_actor_first.first_seen),
  event_firsts AS (
    INSERT INTO rm_actor_event_first (tenant_id, category, name, actor_id, product_id, first_seen)
    SELECT DISTINCT ON (n.tenant_id, n.category COLLATE "C", n.name COLLATE "C", i.actor COLLATE "C") n.tenant_id, n.category, n.name, i.actor, n.product_id, n.first_seen
      FROM (SELECT tenant_id, category, name, actor_id, product_id, min(first_seen) AS first_seen FROM n GROUP BY 1, 2, 3, 4, 5) n
      JOIN ids i ON i.tenant_id = n.tenant_id AND i.actor_id = n.actor_id
     ORDER BY n.tenant_id, n.category COLLATE "C", n.name COLLATE "C", i.actor COLLATE "C", n.first_seen
    ON CONFLICT (tenant_id, category, name, actor_id) DO UPDATE SET first_seen = excluded.first_seen, product_id = excluded.product_id
     WHERE excluded.first_seen < rm_actor_event_first.first_seen),
  -- A session whose start carried neither account nor license takes both from the first of its
  -- events that carries one. If the session was already counted (under no account), the count moves.
  ctx AS (
    SELECT DISTINCT ON (tenant_id, session_id) tenant_id, session_id::text AS session_id, nullif(account_id, '') AS account_id, nullif(license_id, '') AS license_id
      FROM n WHERE session_id IS NOT NULL AND (account_id <> '' OR license_id <> '')
     ORDER BY tenant_id, session_id, first_seen),
  adopted AS (
    INSERT INTO rm_sessions AS s (tenant_id, session_id, account_id, license_id) SELECT * FROM ctx
    ON CONFLICT (tenant_id, session_id) DO UPDATE SET account_id = excluded.account_id, license_id = excluded.license_id
     WHERE s.account_id IS NULL AND s.license_id IS NULL
    RETURNING tenant_id, started_at, day, product_id, product_version, account_id, license_id),
  moved AS (
    INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, sessions)
    SELECT a.tenant_id, a.day, v.a, v.l, a.product_id, a.product_version, v.n
      FROM adopted a CROSS JOIN LATERAL (VALUES ('', '', -1), (coalesce(a.account_id, ''), coalesce(a.license_id, ''), 1)) AS v(a, l, n)
     WHERE a.started_at IS NOT NULL),
  ${due('u')}
  SELECT coalesce(sum(events), 0)::bigint AS events FROM u`;

const SESSION_STARTS = `
  WITH up AS (
    INSERT INTO rm_sessions AS s (tenant_id, session_id, started_at, day, product_id, product_version, actor_id, account_id, license_id, ended_at, end_reason)
    SELECT x.tenant_id, x.session_id, x.started_at, ${utcDay('x.started_at')}, x.product_id, x.product_version, ${resolved('x', 'x.actor_id')},
           x.account_id, x.license_id, x.ended_at, x.end_reason
      FROM sessions x WHERE ${inSlice('x.ingest_xid')}
    ON CONFLICT (tenant_id, session_id) DO UPDATE SET
      started_at = excluded.started_at, day = excluded.day, product_id = excluded.product_id, product_version = excluded.product_version,
      actor_id = excluded.actor_id, ended_at = excluded.ended_at, end_reason = excluded.end_reason,
      account_id = CASE WHEN excluded.account_id IS NULL AND excluded.license_id IS NULL THEN s.account_id ELSE excluded.account_id END,
      license_id = CASE WHEN excluded.account_id IS NULL AND excluded.license_id IS NULL THEN s.license_id ELSE excluded.license_id END
    RETURNING tenant_id, day, account_id, license_id, product_id, product_version),
  usage AS (
    INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, sessions)
    SELECT tenant_id, day, coalesce(account_id, ''), coalesce(license_id, ''), product_id, product_version, count(*) FROM up GROUP BY 1, 2, 3, 4, 5, 6),
  ${due('up')}
  SELECT DISTINCT tenant_id FROM up`;

/** Ends and timeouts are UPDATEs of sessions, found by the xid that made them; copying the state is idempotent. */
const SESSION_CHANGES = `
  UPDATE rm_sessions r SET ended_at = x.ended_at, end_reason = x.end_reason
    FROM sessions x WHERE ${inSlice('x.changed_xid')} AND r.tenant_id = x.tenant_id AND r.session_id = x.session_id`;

const EXCEPTIONS = `
  WITH n AS MATERIALIZED (
    SELECT tenant_id, product_id, product_version AS version, occurred_at AS at, ${utcDay('occurred_at')} AS day, actor_id, session_id,
           severity = 'fatal' AS fatal, coalesce(account_id, '') AS account_id, coalesce(license_id, '') AS license_id
      FROM exceptions WHERE ${inSlice('ingest_xid')}),
  usage AS (
    INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, exceptions, first_seen, last_seen)
    SELECT tenant_id, day, account_id, license_id, product_id, version, count(*), min(at), max(at) FROM n GROUP BY 1, 2, 3, 4, 5, 6),
  days AS (
    INSERT INTO rm_actor_days (tenant_id, day, actor_id, product_id, account_id, license_id, version, events, crashed, first_seen, last_seen)
    SELECT g.tenant_id, g.day, ${resolved('g', 'g.actor_id')}, g.product_id, g.account_id, g.license_id, g.version, 0, g.fatal, g.first_seen, g.last_seen
      FROM (SELECT tenant_id, day, actor_id, product_id, account_id, license_id, (array_agg(version ORDER BY at DESC, version COLLATE "C" DESC))[1] AS version,
                   bool_or(fatal) AS fatal, min(at) AS first_seen, max(at) AS last_seen
              FROM n GROUP BY 1, 2, 3, 4, 5, 6) g),
  sess AS (
    INSERT INTO rm_sessions AS s (tenant_id, session_id, errors, fatal)
    SELECT tenant_id, session_id, count(*), bool_or(fatal) FROM n WHERE session_id IS NOT NULL GROUP BY 1, 2
    ON CONFLICT (tenant_id, session_id) DO UPDATE SET errors = s.errors + excluded.errors, fatal = s.fatal OR excluded.fatal),
  ${due('n')}
  SELECT DISTINCT tenant_id FROM n`;

// Identify links folded late: the anonymous actor's derived rows move to the identified id, for
// every day, including days before the link. Moving is idempotent (a moved row is not found again).
const LINKS = `l AS (
    SELECT tenant_id, anonymous_actor_id AS a, identified_actor_id AS i FROM actor_links
     WHERE ${inSlice('ingest_xid')} AND anonymous_actor_id <> identified_actor_id)`;

const LINKS_ACTOR_DAYS = `
  WITH ${LINKS},
  m AS (DELETE FROM rm_actor_days d USING l WHERE d.tenant_id = l.tenant_id AND d.actor_id = l.a RETURNING d.*, l.i),
  ins AS (
    INSERT INTO rm_actor_days (tenant_id, day, actor_id, product_id, account_id, license_id, version, events, crashed, os, runtime, locale, first_seen, last_seen, hours)
    SELECT tenant_id, day, i, product_id, account_id, license_id, version, events, crashed, os, runtime, locale, first_seen, last_seen, hours FROM m),
  ${due('m')}
  SELECT DISTINCT tenant_id FROM m`;

const LINKS_OTHERS = [
  `WITH ${LINKS}, m AS (DELETE FROM rm_actor_months d USING l WHERE d.tenant_id = l.tenant_id AND d.actor_id = l.a RETURNING d.*, l.i)
   INSERT INTO rm_actor_months (tenant_id, month, actor_id, product_id, account_id, license_id, ${MONTH_HOURS.join(', ')})
   SELECT tenant_id, month, i, product_id, account_id, license_id, ${MONTH_HOURS.join(', ')} FROM m`,
  `WITH ${LINKS}, m AS (DELETE FROM rm_actor_first f USING l WHERE f.tenant_id = l.tenant_id AND f.actor_id = l.a RETURNING f.tenant_id, l.i, f.product_id, f.first_seen)
   INSERT INTO rm_actor_first AS f (tenant_id, actor_id, product_id, first_seen)
   SELECT DISTINCT ON (1, 2) tenant_id, i, product_id, first_seen FROM m ORDER BY 1, 2, first_seen
   ON CONFLICT (tenant_id, actor_id) DO UPDATE SET first_seen = excluded.first_seen, product_id = excluded.product_id WHERE excluded.first_seen < f.first_seen`,
  `WITH ${LINKS}, m AS (
     DELETE FROM rm_actor_event_first f USING l WHERE f.tenant_id = l.tenant_id AND f.actor_id = l.a
     RETURNING f.tenant_id, f.category, f.name, l.i, f.product_id, f.first_seen)
   INSERT INTO rm_actor_event_first AS f (tenant_id, category, name, actor_id, product_id, first_seen)
   SELECT DISTINCT ON (1, 2, 3, 4) tenant_id, category, name, i, product_id, first_seen FROM m ORDER BY 1, 2, 3, 4, first_seen
   ON CONFLICT (tenant_id, category, name, actor_id) DO UPDATE SET first_seen = excluded.first_seen, product_id = excluded.product_id WHERE excluded.first_seen < f.first_seen`,
  `WITH ${LINKS} UPDATE rm_sessions s SET actor_id = l.i FROM l WHERE s.tenant_id = l.tenant_id AND s.actor_id = l.a`,
];
