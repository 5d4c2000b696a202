import type { Db } from './db.js';
import { eventsInsertSql, type EventRecord } from './events.js';
import { deadLetterRows, deadLettersInsertSql, type DeadLetter } from './invalid-events.js';
import { USAGE_SHARDS } from './usage.js';
import { autoRegisterParams, autoRegisterSql } from './versions.js';

export interface EventBatchWrite {
  tenantId: string;
  apiKeyId: string;
  receivedAt: Date;
  /** The billing period the new events are counted in, and the plan's allotment for it. */
  periodStart: Date;
  allotment: number | null;
  /** A cap plan: the stamp is made certain after the commit (below). */
  capped: boolean;
  /** Accepted events, sorted by event_id so that concurrent batches lock in one order. */
  events: EventRecord[];
  letters: DeadLetter[];
  /** (product, version) pairs seen for the first time. */
  newVersions: { productId: string; version: string }[];
  /** Session id → the latest event timestamp of this batch that carries it. */
  sessionsSeen: Map<string, string>;
}

/**
 * Writes a batch as ONE statement, so as its own transaction and in one round trip: data-modifying
 * CTEs, one per table. The accepted events (the unique (tenant, event_id) index drops copies
 * already stored); the usage counter, charged only what was new; the quota stamp when this batch
 * takes the cycle's usage to the allotment; the dead letters; new versions; and the sessions'
 * last sign of life. All of it commits together or not at all, and the caller acknowledges only
 * after it resolves (on the embedded store, after the WAL is on disk).
 *
 * Every CTE reads the snapshot the statement started with, so the quota check adds this batch's
 * count to the committed sum itself: exactly what it would read after the counter's update. It
 * cannot see batches committing at the same moment (another process, another connection): two
 * that together reach the allotment would each see only their own. On a cap plan, where the stamp
 * starts the grace period, every batch therefore counts on one shard: the counter's upsert waits
 * for a concurrent batch's commit and returns the total with it, and the stamp compares that
 * total (plus the other shards, written only before a change to the plan). A cap plan's tenant is
 * limited to a few requests a second, so the one row's lock costs nothing; other plans spread
 * their batches over USAGE_SHARDS rows and stamp from the snapshot (the stamp only informs them).
 *
 * Returns the ids that were new to the store. Usually all of them: the statement returns only the
 * count and its transaction id, and only when the count falls short (a client's retry) are the new
 * ids read back, as the rows this very transaction wrote.
 */
export async function writeEventBatch(db: Db, w: EventBatchWrite): Promise<Set<string>> {
  if (w.events.length === 0 && w.letters.length === 0) return new Set();
  const shard = w.capped ? 0 : Math.floor(Math.random() * USAGE_SHARDS);
  const params: unknown[] = [w.tenantId, w.receivedAt, JSON.stringify(w.events), w.periodStart, shard, w.allotment];
  const $ = (value: unknown): string => `$${params.push(value)}`;
  const parts = [
    `ins AS (${eventsInsertSql('$1', '$2', '$3')} RETURNING 1)`,
    'n AS (SELECT count(*)::int AS n FROM ins)',
    `usage AS (
       INSERT INTO usage_counters (tenant_id, period_start, shard, events) SELECT $1, $4, $5, n.n FROM n WHERE n.n > 0
       ON CONFLICT (tenant_id, period_start, shard) DO UPDATE SET events = usage_counters.events + excluded.events
       RETURNING events)`,
    `stamp AS (
       UPDATE tenants SET quota_exhausted_at = $2, quota_period_start = $4
        WHERE id = $1 AND quota_period_start IS DISTINCT FROM $4 AND (SELECT n FROM n) > 0
          AND ${
            w.capped
              ? '(SELECT events FROM usage) + (SELECT coalesce(sum(events), 0) FROM usage_counters WHERE tenant_id = $1 AND period_start = $4 AND shard <> $5)'
              : '(SELECT coalesce(sum(events), 0) FROM usage_counters WHERE tenant_id = $1 AND period_start = $4) + (SELECT n FROM n)'
          } >= $6)`,
  ];
  if (w.letters.length > 0) parts.push(`letters AS (${deadLettersInsertSql('$1', $(w.apiKeyId), '$2', $(deadLetterRows(w.letters)))})`);
  if (w.newVersions.length > 0) {
    const [ids, products, versions] = autoRegisterParams(w.newVersions);
    parts.push(`versions AS (${autoRegisterSql('$1', $(ids), $(products), $(versions), '$2')})`);
  }
  if (w.sessionsSeen.size > 0) {
    // An open session's last sign of life moves forward (never back); a session whose start has not
    // arrived yet keeps its latest sign in session_early_signs, for its start to fold in.
    const sids = [...w.sessionsSeen.keys()].sort();
    const [s, ts] = [$(sids), $(sids.map((id) => w.sessionsSeen.get(id)))];
    parts.push(
      `seen AS (SELECT * FROM unnest(${s}::text[], ${ts}::timestamptz[]) AS x(sid, ts))`,
      'known AS (SELECT s.session_id FROM sessions s JOIN seen ON s.tenant_id = $1 AND s.session_id = seen.sid)',
      `moved AS (
         UPDATE sessions s SET last_seen_at = seen.ts FROM seen
          WHERE s.tenant_id = $1 AND s.session_id = seen.sid AND s.ended_at IS NULL AND seen.ts > s.last_seen_at)`,
      `early AS (
         INSERT INTO session_early_signs (tenant_id, session_id, last_seen_at)
         SELECT $1, seen.sid, seen.ts FROM seen WHERE seen.sid NOT IN (SELECT session_id FROM known)
         ON CONFLICT (tenant_id, session_id) DO UPDATE SET last_seen_at = excluded.last_seen_at
          WHERE excluded.last_seen_at > session_early_signs.last_seen_at)`,
    );
  }
  const [row] = await db.write<{ n: number; xid: string }>(`WITH ${parts.join(',\n')}\nSELECT n.n, pg_current_xact_id()::text AS xid FROM n`, params);
  if (row!.n === w.events.length) return new Set(w.events.map((e) => e.event_id));
  const fresh = await db.query<{ event_id: string }>(
    'SELECT event_id FROM events WHERE tenant_id = $1 AND event_id = ANY($2::uuid[]) AND ingest_xid = $3::bigint',
    [w.tenantId, w.events.map((e) => e.event_id), row!.xid],
  );
  return new Set(fresh.map((r) => r.event_id));
}
