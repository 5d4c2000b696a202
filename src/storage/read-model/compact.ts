import type { Queryable, ScriptStatement } from '../db.js';
import { MONTH_HOURS, MONTH_KEY } from './tables.js';

// Compaction: a day's insert-only deltas merged into one row per key, in one transaction per
// (tenant, day), by the rollup job (one process at a time, never during a fold). Readers aggregate
// anyway, so an answer is the same before and after. A day is due after FOLDS_DUE folds wrote to
// it, and once it is over if more than one did (after late events for an old day, too). A day's
// rows are written back in account and license order: an account's or a license's rows of a day
// then share a few pages, and its 30-day views read a few hundred pages instead of one per row
// (the biggest account of bench:accounts: 7,880 heap pages and 100 ms for its versions, 310 pages
// and 9–17 ms so ordered). A day that one fold wrote is left as it is: the fold writes its rows in
// that order too, one per key and statement (events; sessions; exceptions), and its rows' merge
// would buy little (a first fold of 10M events in one slice: 171 s of compaction for nothing).
export const FOLDS_DUE = 8;

export async function compactionDue(q: Queryable, today: string, limit: number): Promise<{ tenant_id: string; day: string }[]> {
  return q.query(
    `SELECT tenant_id, day::text AS day FROM rm_compaction_due WHERE folds >= $2 OR (day < $1::date AND folds > 1)
      ORDER BY folds DESC, day LIMIT $3`,
    [today, FOLDS_DUE, limit],
  );
}

/** Forgets the days over that one fold wrote (compactionDue leaves them as they are): a script, one transaction. */
export function settleDays(today: string): ScriptStatement[] {
  return [{ sql: 'DELETE FROM rm_compaction_due WHERE day < $1::date AND folds = 1', params: [today] }];
}

const dayRange = `tenant_id = $1 AND hour >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND hour < ($2::date + 1)::timestamp AT TIME ZONE 'UTC'`;
/** The value of the key's latest row; at a tie of last_seen, the greater in C order, as the fold picks an actor day's last version. */
const last = (col: string) => `(array_agg(${col} ORDER BY last_seen DESC, ${col} COLLATE "C" DESC) FILTER (WHERE ${col} IS NOT NULL))[1]`;

const STATEMENTS = [
  `WITH m AS (DELETE FROM rm_event_hours WHERE ${dayRange} RETURNING *)
   INSERT INTO rm_event_hours (tenant_id, hour, product_id, product_version, category, name, events, first_seen, last_seen)
   SELECT tenant_id, hour, product_id, product_version, category, name, sum(events), min(first_seen), max(last_seen) FROM m GROUP BY 1, 2, 3, 4, 5, 6`,
  `WITH m AS (DELETE FROM rm_usage_days WHERE tenant_id = $1 AND day = $2::date RETURNING *)
   INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, events, sessions, exceptions, first_seen, last_seen)
   SELECT tenant_id, day, account_id, license_id, product_id, product_version, sum(events), sum(sessions), sum(exceptions), min(first_seen), max(last_seen)
     FROM m GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(events) <> 0 OR sum(sessions) <> 0 OR sum(exceptions) <> 0 ORDER BY account_id COLLATE "C", license_id COLLATE "C"`,
  `WITH m AS (DELETE FROM rm_feature_days WHERE tenant_id = $1 AND day = $2::date RETURNING *)
   INSERT INTO rm_feature_days (tenant_id, day, account_id, product_id, category, name, events, first_seen, last_seen)
   SELECT tenant_id, day, account_id, product_id, category, name, sum(events), min(first_seen), max(last_seen) FROM m GROUP BY 1, 2, 3, 4, 5, 6
    ORDER BY account_id COLLATE "C"`,
  `WITH m AS (DELETE FROM rm_actor_days WHERE tenant_id = $1 AND day = $2::date RETURNING *)
   INSERT INTO rm_actor_days (tenant_id, day, actor_id, product_id, account_id, license_id, version, events, crashed, os, runtime, locale, first_seen, last_seen, hours)
   SELECT tenant_id, day, actor_id, product_id, account_id, license_id, ${last('version')}, sum(events), bool_or(crashed),
          ${last('os')}, ${last('runtime')}, ${last('locale')}, min(first_seen), max(last_seen), bit_or(hours)
     FROM m GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY account_id COLLATE "C", license_id COLLATE "C"`,
  'DELETE FROM rm_compaction_due WHERE tenant_id = $1 AND day = $2::date',
];

/** Merges one (tenant, day)'s deltas: a script (script.mjs), one transaction. */
export function compactDay(tenantId: string, day: string): ScriptStatement[] {
  return STATEMENTS.map((sql) => ({ sql, params: [tenantId, day] }));
}

/**
 * One step of rm_actor_months' merge (docs/read-model.md, "Compaction"): up to `limit` keys that
 * have an unmerged delta (the fold's rows, and an identify link's moved rows, come unmerged), found
 * through the partial index over the unmerged rows in key order, each rewritten as one merged row
 * of its rows' hours OR'd. The month's other rows are not read, so a step's cost follows `limit`,
 * not the month. A script (script.mjs), one transaction: a step that dies leaves every row as it
 * was, and OR is idempotent, so readers (which OR a key's rows) answer the same before, during and
 * after. Its statement named `merged` answers the keys it merged (`keys`; fewer than `limit`: none
 * was left) and the rows it read (`rows`).
 */
export function mergeMonthsStep(limit: number): ScriptStatement[] {
  const key = MONTH_KEY.join(', ');
  return [
    // The keys come from the partial index in key order (a LIMIT over its first entries, whatever the table's size), each
    // key's rows through an index: with the statistics stale (after a first fold) the planner chose a scan and sort of every
    // unmerged row per step, 0.35 s for 192k rows, growing with the backlog.
    { sql: "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashagg', 'off', true)" },
    {
      name: 'merged',
      sql: `WITH k AS MATERIALIZED (
            SELECT DISTINCT ${key} FROM rm_actor_months WHERE NOT merged ORDER BY ${key} LIMIT $1),
          m AS (DELETE FROM rm_actor_months r USING k WHERE ${MONTH_KEY.map((c) => `r.${c} = k.${c}`).join(' AND ')} RETURNING r.*),
          ins AS (
            INSERT INTO rm_actor_months (${key}, ${MONTH_HOURS.join(', ')}, merged)
            SELECT ${key}, ${MONTH_HOURS.map((h) => `bit_or(${h})`).join(', ')}, true FROM m GROUP BY ${key})
     SELECT (SELECT count(*) FROM k)::int AS keys, (SELECT count(*) FROM m)::int AS rows`,
      params: [limit],
    },
  ];
}
