import type { Queryable } from './db.js';
import { iso } from './rows.js';

export interface SessionStart {
  session_id: string;
  product_id: string;
  product_version: string;
  actor_id: string;
  account_id: string | null;
  license_id: string | null;
  properties: Record<string, unknown> | null;
  started_at: string;
}

export interface SessionRow {
  session_id: string;
  started_at: string;
  ended_at: string | null;
  end_reason: string | null;
  account_id: string | null;
  license_id: string | null;
}

function toSession(r: Record<string, unknown>): SessionRow {
  return {
    session_id: r.session_id as string,
    started_at: iso(r.started_at)!,
    ended_at: iso(r.ended_at),
    end_reason: (r.end_reason as string | null) ?? null,
    account_id: (r.account_id as string | null) ?? null,
    license_id: (r.license_id as string | null) ?? null,
  };
}

const COLUMNS = 'session_id, started_at, ended_at, end_reason, account_id, license_id';

/** Inserts the session unless it exists; returns whether it was new. A repeated start changes nothing. */
export async function insertSession(
  q: Queryable,
  tenantId: string,
  s: SessionStart,
  receivedAt: Date,
  end?: { ended_at: string; end_reason: string },
): Promise<boolean> {
  const rows = await q.query(
    `WITH early AS (DELETE FROM session_early_signs WHERE tenant_id = $1 AND session_id = $2 RETURNING last_seen_at)
     INSERT INTO sessions (tenant_id, session_id, product_id, product_version, actor_id, account_id, license_id, properties,
                           started_at, last_seen_at, ended_at, end_reason, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::timestamptz, greatest($9::timestamptz, (SELECT max(last_seen_at) FROM early)), $10, $11, $12)
     ON CONFLICT (tenant_id, session_id) DO NOTHING RETURNING session_id`,
    [
      tenantId,
      s.session_id,
      s.product_id,
      s.product_version,
      s.actor_id,
      s.account_id,
      s.license_id,
      s.properties,
      s.started_at,
      end?.ended_at ?? null,
      end?.end_reason ?? null,
      receivedAt,
    ],
  );
  return rows.length > 0;
}

/** Serialises a start and an end of one session racing each other (until the transaction ends). */
export async function lockSession(q: Queryable, tenantId: string, sessionId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${tenantId}/${sessionId}`]);
}

export async function findSession(q: Queryable, tenantId: string, sessionId: string): Promise<SessionRow | undefined> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM sessions WHERE tenant_id = $1 AND session_id = $2`, [tenantId, sessionId]);
  return rows[0] ? toSession(rows[0]) : undefined;
}

/** Ends an open session; the first end wins (false when it was already ended). */
export async function endSession(q: Queryable, tenantId: string, sessionId: string, endedAt: string, reason: string): Promise<boolean> {
  const rows = await q.query(
    'UPDATE sessions SET ended_at = $3, end_reason = $4, changed_xid = pg_current_xact_id()::text::bigint WHERE tenant_id = $1 AND session_id = $2 AND ended_at IS NULL RETURNING session_id',
    [tenantId, sessionId, endedAt, reason],
  );
  return rows.length > 0;
}

/** Keeps an end whose start has not arrived; the first such end wins. */
export async function keepPendingEnd(q: Queryable, tenantId: string, sessionId: string, endedAt: string, reason: string, receivedAt: Date): Promise<void> {
  await q.query(
    `INSERT INTO pending_session_ends (tenant_id, session_id, ended_at, end_reason, received_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, session_id) DO NOTHING`,
    [tenantId, sessionId, endedAt, reason, receivedAt],
  );
}

/** Takes (and removes) a pending end for this session, if one arrived within the last hour. */
export async function takePendingEnd(
  q: Queryable,
  tenantId: string,
  sessionId: string,
  now: Date,
): Promise<{ ended_at: string; end_reason: string } | undefined> {
  const rows = await q.query<{ ended_at: Date; end_reason: string; received_at: Date }>(
    'DELETE FROM pending_session_ends WHERE tenant_id = $1 AND session_id = $2 RETURNING ended_at, end_reason, received_at',
    [tenantId, sessionId],
  );
  const r = rows[0];
  if (!r || now.getTime() - r.received_at.getTime() > 3_600_000) return undefined;
  return { ended_at: iso(r.ended_at)!, end_reason: r.end_reason };
}

/** Server-side timeout marking: ended_at = the last sign of life. Bounded per call. */
export async function timeOutSessions(q: Queryable, cutoff: Date, limit: number): Promise<number> {
  const rows = await q.query(
    `UPDATE sessions SET ended_at = last_seen_at, end_reason = 'timeout', changed_xid = pg_current_xact_id()::text::bigint
      WHERE (tenant_id, session_id) IN (
        SELECT tenant_id, session_id FROM sessions WHERE ended_at IS NULL AND last_seen_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING session_id`,
    [cutoff, limit],
  );
  return rows.length;
}

export async function purgePendingEnds(q: Queryable, olderThan: Date): Promise<void> {
  await q.query('DELETE FROM pending_session_ends WHERE received_at < $1', [olderThan]);
}

/** Signs of sessions that never started, older than the session timeout, are forgotten. */
export async function purgeEarlySigns(q: Queryable, olderThan: Date): Promise<void> {
  await q.query('DELETE FROM session_early_signs WHERE last_seen_at < $1', [olderThan]);
}
