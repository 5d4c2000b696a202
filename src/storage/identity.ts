import type { Queryable } from './db.js';

/** Links an anonymous actor to a user once; returns the user it is linked to (the existing one on a repeat). */
export async function linkActor(
  q: Queryable,
  tenantId: string,
  link: { anonymous: string; identified: string; identifiedAt: string; productId: string; productVersion: string | null },
  receivedAt: Date,
): Promise<string> {
  const rows = await q.query<{ identified_actor_id: string }>(
    `WITH ins AS (
       INSERT INTO actor_links (tenant_id, anonymous_actor_id, identified_actor_id, identified_at, product_id, product_version, received_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, anonymous_actor_id) DO NOTHING RETURNING identified_actor_id)
     SELECT identified_actor_id FROM ins
     UNION ALL SELECT identified_actor_id FROM actor_links WHERE tenant_id = $1 AND anonymous_actor_id = $2 LIMIT 1`,
    [tenantId, link.anonymous, link.identified, link.identifiedAt, link.productId, link.productVersion, receivedAt],
  );
  return rows[0]!.identified_actor_id;
}

/** The user an anonymous actor is linked to, if it is. */
export async function linkedUser(q: Queryable, tenantId: string, anonymous: string): Promise<string | undefined> {
  const rows = await q.query<{ identified_actor_id: string }>('SELECT identified_actor_id FROM actor_links WHERE tenant_id = $1 AND anonymous_actor_id = $2', [
    tenantId,
    anonymous,
  ]);
  return rows[0]?.identified_actor_id;
}

export type Traits = Record<string, string | number | boolean>;

/** Keeps the newest traits (by identified_at) of an identified actor. */
export async function saveTraits(q: Queryable, tenantId: string, actorId: string, traits: Traits, identifiedAt: string, receivedAt: Date): Promise<void> {
  await q.query(
    `INSERT INTO actor_traits (tenant_id, actor_id, traits, identified_at, received_at) VALUES ($1, $2, $3::jsonb, $4, $5)
     ON CONFLICT (tenant_id, actor_id) DO UPDATE SET traits = excluded.traits, identified_at = excluded.identified_at, received_at = excluded.received_at
       WHERE actor_traits.identified_at <= excluded.identified_at`,
    [tenantId, actorId, JSON.stringify(traits), identifiedAt, receivedAt],
  );
}

/**
 * The traits of each actor: its own, else those of the user an anonymous actor was linked to.
 * Actors without traits are absent from the map.
 */
export async function traitsOf(q: Queryable, tenantId: string, actorIds: string[]): Promise<Map<string, Traits>> {
  if (actorIds.length === 0) return new Map();
  const rows = await q.query<{ actor_id: string; traits: Traits }>(
    `SELECT a.actor_id, coalesce(own.traits, linked.traits) AS traits
       FROM unnest($2::text[]) AS a(actor_id)
       LEFT JOIN actor_traits own ON own.tenant_id = $1 AND own.actor_id = a.actor_id
       LEFT JOIN actor_links l ON own.actor_id IS NULL AND l.tenant_id = $1 AND l.anonymous_actor_id = a.actor_id
       LEFT JOIN actor_traits linked ON linked.tenant_id = $1 AND linked.actor_id = l.identified_actor_id
      WHERE coalesce(own.traits, linked.traits) IS NOT NULL`,
    [tenantId, actorIds],
  );
  return new Map(rows.map((r) => [r.actor_id, typeof r.traits === 'string' ? (JSON.parse(r.traits) as Traits) : r.traits]));
}

/** Keeps the latest environment per (actor, session); '' stands for "no session". */
export async function upsertEnvironments(
  q: Queryable,
  tenantId: string,
  data: unknown,
  pairs: { actorId: string; sessionId: string | null }[],
  receivedAt: Date,
): Promise<void> {
  if (pairs.length === 0) return;
  const unique = [...new Map(pairs.map((p) => [`${p.actorId}\u0001${p.sessionId ?? ''}`, p])).values()].sort((a, b) =>
    a.actorId + (a.sessionId ?? '') < b.actorId + (b.sessionId ?? '') ? -1 : 1,
  );
  await q.query(
    `INSERT INTO environments (tenant_id, actor_id, session_id, data, received_at)
     SELECT $1, a, s, $4::jsonb, $5 FROM unnest($2::text[], $3::text[]) AS x(a, s)
     ON CONFLICT (tenant_id, actor_id, session_id) DO UPDATE SET data = excluded.data, received_at = excluded.received_at`,
    [tenantId, unique.map((p) => p.actorId), unique.map((p) => p.sessionId ?? ''), JSON.stringify(data), receivedAt],
  );
}
