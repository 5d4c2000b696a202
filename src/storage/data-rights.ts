// Data rights: erasing one actor, exporting one actor's records, and raw-event retention.
// eraseActor lists every table that holds an actor's data; a table added later that holds
// actor ids (raw or derived) must be added there, or an erasure leaves it behind.
import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { lockReadModelWrites, type Queryable } from './db.js';
import { iso } from './rows.js';

export const actorDigest = (tenantId: string, actorId: string) => createHash('sha256').update(`${tenantId}\u0000${actorId}`).digest('hex');

export interface ErasureRow {
  id: string;
  status: 'pending' | 'done' | 'failed';
  requested_at: string;
  completed_at: string | null;
  erased: Record<string, number> | null;
  error: string | null;
}

function toErasure(r: Record<string, unknown>): ErasureRow {
  return {
    id: r.id as string,
    status: r.status as ErasureRow['status'],
    requested_at: iso(r.requested_at)!,
    completed_at: iso(r.completed_at),
    erased: (r.erased as Record<string, number> | null) ?? null,
    error: (r.error as string | null) ?? null,
  };
}

const ERASURE_COLUMNS = 'id, status, requested_at, completed_at, erased, error';

export async function requestErasure(q: Queryable, tenantId: string, actorId: string, keyId: string, now: Date): Promise<ErasureRow> {
  const rows = await q.query(
    `INSERT INTO actor_erasures (id, tenant_id, actor_id, actor_digest, status, requested_at, requested_by)
     VALUES ($1, $2, $3, $4, 'pending', $5, $6) RETURNING ${ERASURE_COLUMNS}`,
    [uuidv7(), tenantId, actorId, actorDigest(tenantId, actorId), now, keyId],
  );
  return toErasure(rows[0]!);
}

export async function getErasure(q: Queryable, tenantId: string, id: string): Promise<ErasureRow | undefined> {
  const rows = await q.query(`SELECT ${ERASURE_COLUMNS} FROM actor_erasures WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? toErasure(rows[0]) : undefined;
}

export async function pendingErasures(q: Queryable, limit: number): Promise<{ id: string; tenant_id: string; actor_id: string }[]> {
  return q.query(`SELECT id, tenant_id, actor_id FROM actor_erasures WHERE status = 'pending' ORDER BY requested_at LIMIT $1`, [limit]);
}

/**
 * Every id the erasure covers: the actor, and the anonymous ids linked to it (the same person's
 * devices before they signed in). When the actor is itself an anonymous id, its user is not
 * erased: only the link between them goes.
 */
async function actorIds(q: Queryable, tenantId: string, actorId: string): Promise<string[]> {
  const rows = await q.query<{ anonymous_actor_id: string }>('SELECT anonymous_actor_id FROM actor_links WHERE tenant_id = $1 AND identified_actor_id = $2', [
    tenantId,
    actorId,
  ]);
  return [actorId, ...rows.map((r) => r.anonymous_actor_id)];
}

/** rows removed (or, for derived counts, rows changed), per table */
export type Erased = Record<string, number>;

/**
 * Erases one actor of one tenant, and its identity links, from raw and derived data, in one
 * transaction (pass a transaction's Queryable). Every table that holds an actor's data is here:
 *   raw:     events, sessions (and their pending ends and early signs), exceptions, environments,
 *            actor_links, invalid_events (any dead letter whose raw payload names the actor)
 *   derived: rm_event_hours, rm_feature_days, rm_usage_days (the actor's folded share taken out
 *            as negative deltas), rm_account_version_first (its accounts' rows recomputed from
 *            those usage days), rm_actor_days, rm_actor_months, rm_actor_first, rm_actor_event_first, rm_sessions,
 *            rm_actor_ordinals (the actor's rows; its days' rm_session_sets are built again), actor_traits, segment_members, and rollup_dirty (the tenant's
 *            account and license snapshots are rebuilt at the next run)
 * Usage counters (billing) are not changed: they count events, not people.
 */
export async function eraseActor(q: Queryable, tenantId: string, actorId: string): Promise<Erased> {
  await lockReadModelWrites(q);
  const ids = await actorIds(q, tenantId, actorId);
  const p = [tenantId, ids];
  const erased: Erased = {};
  const count = async (table: string, sql: string, params: unknown[] = p) => {
    const rows = await q.query<{ n: number }>(`WITH x AS (${sql} RETURNING 1) SELECT count(*)::int AS n FROM x`, params);
    erased[table] = (erased[table] ?? 0) + rows[0]!.n;
  };

  // Derived. The count tables hold no actor id: what the actor contributed, of the rows already
  // folded (below the job's horizon and not pending), is taken out as negative deltas (readers sum,
  // docs/read-model.md). Then every row of the read model that names the actor goes.
  const folded = (col: string) => `${col} < s.horizon AND ${col} <> ALL(coalesce(s.pending, '{}'::bigint[]))`;
  const hour = (col: string) => `(date_trunc('hour', ${col} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;
  const day = (col: string) => `((${col} AT TIME ZONE 'UTC')::date)`;
  const mine = 'r.tenant_id = $1 AND r.actor_id = ANY($2::text[])';
  await count(
    'rm_event_hours',
    `INSERT INTO rm_event_hours (tenant_id, hour, product_id, product_version, category, name, events, first_seen, last_seen)
     SELECT r.tenant_id, ${hour('r.occurred_at')}, r.product_id, r.product_version, r.category, r.name, -count(*), min(r.occurred_at), max(r.occurred_at)
       FROM events r, rollup_state s WHERE s.id = 1 AND ${mine} AND ${folded('r.ingest_xid')} GROUP BY 1, 2, 3, 4, 5, 6`,
  );
  await count(
    'rm_feature_days',
    `INSERT INTO rm_feature_days (tenant_id, day, account_id, product_id, category, name, events, first_seen, last_seen)
     SELECT r.tenant_id, ${day('r.occurred_at')}, coalesce(r.account_id, ''), r.product_id, r.category, r.name, -count(*), min(r.occurred_at), max(r.occurred_at)
       FROM events r, rollup_state s WHERE s.id = 1 AND ${mine} AND ${folded('r.ingest_xid')} GROUP BY 1, 2, 3, 4, 5, 6`,
  );
  await count(
    'rm_usage_days',
    `INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, events, first_seen, last_seen)
     SELECT r.tenant_id, ${day('r.occurred_at')}, coalesce(r.account_id, ''), coalesce(r.license_id, ''), r.product_id, r.product_version, -count(*), min(r.occurred_at), max(r.occurred_at)
       FROM events r, rollup_state s WHERE s.id = 1 AND ${mine} AND ${folded('r.ingest_xid')} GROUP BY 1, 2, 3, 4, 5, 6`,
  );
  await count(
    'rm_usage_days',
    `INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, exceptions, first_seen, last_seen)
     SELECT r.tenant_id, ${day('r.occurred_at')}, coalesce(r.account_id, ''), coalesce(r.license_id, ''), r.product_id, r.product_version, -count(*), min(r.occurred_at), max(r.occurred_at)
       FROM exceptions r, rollup_state s WHERE s.id = 1 AND ${mine} AND ${folded('r.ingest_xid')} GROUP BY 1, 2, 3, 4, 5, 6`,
  );
  // A session counts under the account and license the read model gave it (rm_sessions, as folded).
  await count(
    'rm_usage_days',
    `INSERT INTO rm_usage_days (tenant_id, day, account_id, license_id, product_id, product_version, sessions)
     SELECT r.tenant_id, r.day, coalesce(r.account_id, ''), coalesce(r.license_id, ''), r.product_id, r.product_version, -count(*)
       FROM rm_sessions r WHERE ${mine} AND r.started_at IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6`,
  );
  // Each account's first day on a version, for the accounts the actor's folded events named (read
  // once): their rows go (counted), and come back recomputed from their usage days, which now hold
  // no share of the actor.
  const named = await q.query<{ product_id: string; account_id: string }>(
    `SELECT DISTINCT r.product_id, r.account_id FROM events r, rollup_state s
      WHERE s.id = 1 AND ${mine} AND r.account_id <> '' AND ${folded('r.ingest_xid')}`,
    p,
  );
  const accounts = 'unnest($2::uuid[], $3::text[]) AS a(product_id, account_id)';
  const pa = [tenantId, named.map((r) => r.product_id), named.map((r) => r.account_id)];
  await count(
    'rm_account_version_first',
    `DELETE FROM rm_account_version_first f USING ${accounts}
      WHERE f.tenant_id = $1 AND f.product_id = a.product_id AND f.account_id = a.account_id`,
    pa,
  );
  await q.query(
    `INSERT INTO rm_account_version_first (tenant_id, product_id, product_version, account_id, day)
     SELECT $1, u.product_id, u.product_version, u.account_id, min(u.day)
       FROM (SELECT u.day, u.product_id, u.product_version, u.account_id
               FROM rm_usage_days u JOIN ${accounts} ON a.product_id = u.product_id AND a.account_id = u.account_id
              WHERE u.tenant_id = $1 GROUP BY 1, 2, 3, 4 HAVING sum(u.events) > 0) u
      GROUP BY 2, 3, 4`,
    pa,
  );
  // rm_sessions' delete marks the actor's days stale (migration 230): their release-health sets are built again without it.
  for (const table of [
    'rm_actor_days',
    'rm_actor_months',
    'rm_actor_first',
    'rm_actor_event_first',
    'rm_sessions',
    'rm_actor_ordinals',
    'actor_traits',
    'segment_members',
  ]) {
    await count(table, `DELETE FROM ${table} WHERE tenant_id = $1 AND actor_id = ANY($2::text[])`);
  }
  await q.query('INSERT INTO rollup_dirty (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING', [tenantId]);

  // Raw.
  await count(
    'session_early_signs',
    `DELETE FROM session_early_signs s USING events e
      WHERE s.tenant_id = $1 AND e.tenant_id = $1 AND e.actor_id = ANY($2::text[]) AND s.session_id = e.session_id::text`,
  );
  await count('events', 'DELETE FROM events WHERE tenant_id = $1 AND actor_id = ANY($2::text[])');
  await count(
    'pending_session_ends',
    `DELETE FROM pending_session_ends pe USING sessions s
      WHERE pe.tenant_id = $1 AND s.tenant_id = $1 AND s.actor_id = ANY($2::text[]) AND pe.session_id = s.session_id`,
  );
  await count('sessions', 'DELETE FROM sessions WHERE tenant_id = $1 AND actor_id = ANY($2::text[])');
  await count('exceptions', 'DELETE FROM exceptions WHERE tenant_id = $1 AND actor_id = ANY($2::text[])');
  await count('environments', 'DELETE FROM environments WHERE tenant_id = $1 AND actor_id = ANY($2::text[])');
  await count(
    'actor_links',
    'DELETE FROM actor_links WHERE tenant_id = $1 AND (anonymous_actor_id = ANY($2::text[]) OR identified_actor_id = ANY($2::text[]))',
  );
  // A dead letter's payload is the raw element as sent (perhaps cut at 8 KB, so not always JSON):
  // any that holds one of the ids as a JSON string goes.
  await count(
    'invalid_events',
    `DELETE FROM invalid_events WHERE tenant_id = $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS j(s) WHERE strpos(payload, j.s) > 0)`,
    [tenantId, ids.map((id) => JSON.stringify(id))],
  );
  return erased;
}

/** Done: the actor's id is dropped from the audit row (its digest stays). Failed: kept, to retry. */
export async function finishErasure(q: Queryable, id: string, outcome: { erased: Erased } | { error: string }, now: Date): Promise<void> {
  if ('erased' in outcome) {
    await q.query(`UPDATE actor_erasures SET status = 'done', actor_id = NULL, completed_at = $2, erased = $3::jsonb, error = NULL WHERE id = $1`, [
      id,
      now,
      JSON.stringify(outcome.erased),
    ]);
  } else {
    await q.query(`UPDATE actor_erasures SET status = 'failed', completed_at = $2, error = $3 WHERE id = $1`, [id, now, outcome.error]);
  }
}

/** One actor's records (and those of the anonymous ids linked to it), table by table, a page at a time, as JSON rows. */
export async function* exportActor(
  q: Queryable,
  tenantId: string,
  actorId: string,
  pageSize = 1000,
): AsyncGenerator<{ type: string; record: Record<string, unknown> }> {
  const ids = await actorIds(q, tenantId, actorId);
  // Each table in its key order, resumed after the last key seen (keyset pages, so a page costs the same at any depth).
  const tables: { type: string; table: string; where: string; key: string }[] = [
    { type: 'event', table: 'events', where: 'actor_id = ANY($2::text[])', key: 'event_id::text' },
    { type: 'session', table: 'sessions', where: 'actor_id = ANY($2::text[])', key: 'session_id' },
    { type: 'exception', table: 'exceptions', where: 'actor_id = ANY($2::text[])', key: 'exception_id' },
    {
      type: 'identity_link',
      table: 'actor_links',
      where: '(anonymous_actor_id = ANY($2::text[]) OR identified_actor_id = ANY($2::text[]))',
      key: 'anonymous_actor_id',
    },
    { type: 'environment', table: 'environments', where: 'actor_id = ANY($2::text[])', key: "actor_id || '\u0001' || session_id" },
  ];
  for (const t of tables) {
    let after = '';
    for (;;) {
      const rows = await q.query<{ k: string; record: Record<string, unknown> }>(
        `SELECT ${t.key} AS k, to_jsonb(r) - 'tenant_id' - 'ingest_xid' AS record FROM ${t.table} r
          WHERE tenant_id = $1 AND ${t.where} AND ${t.key} > $3 ORDER BY ${t.key} LIMIT $4`,
        [tenantId, ids, after, pageSize],
      );
      for (const r of rows) yield { type: t.type, record: r.record };
      if (rows.length < pageSize) break;
      after = rows[rows.length - 1]!.k;
    }
  }
}

/** Each tenant's raw-event retention in days as set on the tenant (null: not set there), with its plan. */
export async function tenantRetentions(q: Queryable): Promise<{ id: string; plan: string; event_retention_days: number | null }[]> {
  return q.query('SELECT id, plan, event_retention_days FROM tenants ORDER BY id');
}

/** Deletes up to `limit` of the tenant's raw events that occurred before `cutoff`; returns how many. */
export async function purgeOldEvents(q: Queryable, tenantId: string, cutoff: Date, limit: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH gone AS (DELETE FROM events WHERE tenant_id = $1 AND ctid = ANY(ARRAY(SELECT ctid FROM events WHERE tenant_id = $1 AND occurred_at < $2 LIMIT $3)) RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [tenantId, cutoff, limit],
  );
  return rows[0]!.n;
}
