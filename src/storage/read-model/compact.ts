import type { Queryable, ScriptStatement } from '../db.js';
import { MONTH_HOURS } from './tables.js';

// Compaction: a day's insert-only deltas merged into one row per key, in one transaction per
// (tenant, day), by the rollup job (one process at a time, never during a fold). Readers aggregate
// anyway, so an answer is the same before and after. A day is due after FOLDS_DUE folds wrote to
// it, and once it is over (after a late event for an old day, too): a day written by one fold
// holds one row per key already, but in the fold's order. A day's rows are written back in account and license order:
// an account's or a license's rows of a day then share a few pages, and its 30-day views read a
// few hundred pages instead of one per row (the biggest account of bench:accounts: 7,880 heap
// pages and 100 ms for its versions, 310 pages and 9–17 ms so ordered).
export const FOLDS_DUE = 8;

export async function compactionDue(q: Queryable, today: string, limit: number): Promise<{ tenant_id: string; day: string }[]> {
  return q.query(
    `SELECT tenant_id, day::text AS day FROM rm_compaction_due WHERE folds >= $2 OR day < $1::date
      ORDER BY folds DESC, day LIMIT $3`,
    [today, FOLDS_DUE, limit],
  );
}

const dayRange = `tenant_id = $1 AND hour >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND hour < ($2::date + 1)::timestamp AT TIME ZONE 'UTC'`;
const last = (col: string) => `(array_agg(${col} ORDER BY last_seen DESC) FILTER (WHERE ${col} IS NOT NULL))[1]`;

const STATEMENTS = [
  `WITH m AS (DELETE FROM rm_event_hours WHERE ${dayRange} RETURNING *)
   INSERT INTO rm_event_hours (tenant_id, hour, product_id, product_version, category, name, events, first_seen, last_seen)
   SELECT tenant_id, hour, product_id, product_version, category, name, sum(events), min(first_seen), max(last_seen) FROM m GROUP BY 1, 2, 3, 4, 5, 6`,
  `WITH m AS (DELETE FROM rm_usage_days WHERE tenant_id = $1 AND day = $2::date RETURNING *)
   INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, events, sessions, exceptions, first_seen, last_seen)
   SELECT tenant_id, day, account_id, license_id, product_id, product_version, sum(events), sum(sessions), sum(exceptions), min(first_seen), max(last_seen)
     FROM m GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(events) <> 0 OR sum(sessions) <> 0 OR sum(exceptions) <> 0 ORDER BY account_id, license_id`,
  `WITH m AS (DELETE FROM rm_feature_days WHERE tenant_id = $1 AND day = $2::date RETURNING *)
   INSERT INTO rm_feature_days (tenant_id, day, account_id, license_id, product_id, category, name, events, first_seen, last_seen)
   SELECT tenant_id, day, account_id, license_id, product_id, category, name, sum(events), min(first_seen), max(last_seen) FROM m GROUP BY 1, 2, 3, 4, 5, 6, 7
    ORDER BY account_id, license_id`,
  `WITH m AS (DELETE FROM rm_actor_days WHERE tenant_id = $1 AND day = $2::date RETURNING *)
   INSERT INTO rm_actor_days (tenant_id, day, actor_id, product_id, account_id, license_id, version, events, crashed, os, runtime, locale, first_seen, last_seen, hours)
   SELECT tenant_id, day, actor_id, product_id, account_id, license_id, ${last('version')}, sum(events), bool_or(crashed),
          ${last('os')}, ${last('runtime')}, ${last('locale')}, min(first_seen), max(last_seen), bit_or(hours)
     FROM m GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY account_id, license_id`,
  'DELETE FROM rm_compaction_due WHERE tenant_id = $1 AND day = $2::date',
];

/** Merges one (tenant, day)'s deltas: a script (script.mjs), one transaction. */
export function compactDay(tenantId: string, day: string): ScriptStatement[] {
  return STATEMENTS.map((sql) => ({ sql, params: [tenantId, day] }));
}

/**
 * Merges one (tenant, UTC month)'s rm_actor_months deltas: the keys with more than one row become
 * one row, their hours OR'd (idempotent: a merge at any time gives the same bits). Only those keys
 * are rewritten, so a month's cost is a read of its rows and a rewrite of what changed since the last
 * merge, not the whole month. The job runs it once per month whose days it compacted: a script
 * (script.mjs), one transaction.
 */
export function compactMonth(tenantId: string, month: string): ScriptStatement[] {
  const key = ['actor_id', 'product_id', 'account_id', 'license_id'];
  return [
    {
      sql: `WITH k AS (SELECT ${key.join(', ')} FROM rm_actor_months WHERE tenant_id = $1 AND month = $2::date GROUP BY 1, 2, 3, 4 HAVING count(*) > 1),
          m AS (DELETE FROM rm_actor_months r USING k WHERE r.tenant_id = $1 AND r.month = $2::date AND ${key.map((c) => `r.${c} = k.${c}`).join(' AND ')} RETURNING r.*)
     INSERT INTO rm_actor_months (tenant_id, month, ${key.join(', ')}, ${MONTH_HOURS.join(', ')})
     SELECT tenant_id, month, ${key.join(', ')}, ${MONTH_HOURS.map((h) => `bit_or(${h})`).join(', ')} FROM m GROUP BY 1, 2, 3, 4, 5, 6`,
      params: [tenantId, month],
    },
  ];
}
