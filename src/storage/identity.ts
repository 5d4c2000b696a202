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

/** Keeps the latest environment per (actor, session); '' stands for "no session". */
export async function upsertEnvironments(q: Queryable, tenantId: string, data: unknown, pairs: { actorId: string; sessionId: string | null }[], receivedAt: Date): Promise<void> {
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
