import { v7 as uuidv7 } from 'uuid';
import { isUuidText } from '../domain/text.js';
import type { Queryable } from './db.js';
import { iso } from './rows.js';

// Saved segments: tenant first in every signature; another tenant's id is simply not found.

export interface SegmentRow {
  id: string;
  name: string;
  description: string | null;
  definition: Record<string, unknown>;
  static: boolean;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id::text AS id, name, description, definition, static, created_at, updated_at';
const row = (r: Record<string, unknown>): SegmentRow => ({
  id: String(r.id),
  name: String(r.name),
  description: (r.description as string | null) ?? null,
  definition: (typeof r.definition === 'string' ? JSON.parse(r.definition) : r.definition) as Record<string, unknown>,
  static: Boolean(r.static),
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

export async function insertSegment(
  q: Queryable,
  tenantId: string,
  s: { name: string; description?: string | undefined; definition: unknown; static?: boolean },
  now: Date,
): Promise<SegmentRow> {
  const rows = await q.query(
    `INSERT INTO segments (id, tenant_id, name, description, definition, static, created_at, updated_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7) RETURNING ${COLUMNS}`,
    [uuidv7(), tenantId, s.name, s.description ?? null, JSON.stringify(s.definition), s.static ?? false, now],
  );
  return row(rows[0]!);
}

export async function addStaticMembers(q: Queryable, tenantId: string, segmentId: string, actorIds: string[]): Promise<void> {
  if (actorIds.length === 0) return;
  await q.query('INSERT INTO segment_members (tenant_id, segment_id, actor_id) SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING', [
    tenantId,
    segmentId,
    actorIds,
  ]);
}

export async function getSegment(q: Queryable, tenantId: string, id: string): Promise<SegmentRow | undefined> {
  if (!isUuidText(id)) return undefined;
  const rows = await q.query(`SELECT ${COLUMNS} FROM segments WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? row(rows[0]) : undefined;
}

export async function listSegments(q: Queryable, tenantId: string, after: string | undefined, limit: number): Promise<SegmentRow[]> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM segments WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid) ORDER BY id LIMIT $3`, [
    tenantId,
    after ?? null,
    limit,
  ]);
  return rows.map(row);
}

export async function updateSegment(
  q: Queryable,
  tenantId: string,
  id: string,
  s: { name?: string | undefined; description?: string | undefined; definition?: unknown },
  now: Date,
): Promise<SegmentRow | undefined> {
  if (!(await getSegment(q, tenantId, id))) return undefined;
  const rows = await q.query(
    `UPDATE segments SET name = COALESCE($3, name), description = COALESCE($4, description), definition = COALESCE($5::jsonb, definition), updated_at = $6
      WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, s.name ?? null, s.description ?? null, s.definition === undefined ? null : JSON.stringify(s.definition), now],
  );
  return rows[0] ? row(rows[0]) : undefined;
}

export async function deleteSegment(q: Queryable, tenantId: string, id: string): Promise<boolean> {
  if (!(await getSegment(q, tenantId, id))) return false;
  await q.query('DELETE FROM segments WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return true;
}
