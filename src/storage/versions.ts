import { v7 as uuidv7 } from 'uuid';
import type { Queryable } from './db.js';
import { iso, isoDate } from './rows.js';

export interface VersionRow {
  id: string;
  product_id: string;
  product_version: string;
  status: 'active' | 'archived';
  release_date: string | null;
  source: 'registered' | 'auto';
  created_at: string;
  first_seen: string | null;
  last_seen: string | null;
}

const COLUMNS = 'id, product_id, version, status, release_date, source, created_at, first_seen, last_seen';

function toVersion(r: Record<string, unknown>): VersionRow {
  return {
    id: r.id as string,
    product_id: r.product_id as string,
    product_version: r.version as string,
    status: r.status as VersionRow['status'],
    release_date: isoDate(r.release_date),
    source: r.source as VersionRow['source'],
    created_at: iso(r.created_at)!,
    first_seen: iso(r.first_seen),
    last_seen: iso(r.last_seen),
  };
}

export async function listVersions(
  q: Queryable,
  tenantId: string,
  productId: string,
  limit: number,
  afterId: string | undefined,
  status?: 'active' | 'archived',
): Promise<VersionRow[]> {
  const rows = await q.query(
    `SELECT ${COLUMNS} FROM product_versions
      WHERE tenant_id = $1 AND product_id = $2 AND ($3::uuid IS NULL OR id > $3::uuid) AND ($5::text IS NULL OR status = $5) ORDER BY id LIMIT $4`,
    [tenantId, productId, afterId ?? null, limit, status ?? null],
  );
  return rows.map(toVersion);
}

/** The key of a (product, version) pair in maps of version statuses. */
export const versionKey = (productId: string, version: string): string => `${productId}\u0001${version}`;

/**
 * Registers versions seen for the first time. Race-free: the unique (product_id, version) index
 * decides, and concurrent batches that bring the same new version make one row. Sorted so that
 * two batches never lock the same pairs in opposite orders.
 */
export async function autoRegisterVersions(q: Queryable, tenantId: string, pairs: { productId: string; version: string }[], seenAt: Date): Promise<void> {
  if (pairs.length === 0) return;
  const [ids, products, versions] = autoRegisterParams(pairs);
  await q.query(autoRegisterSql('$1', '$2', '$3', '$4', '$5'), [tenantId, ids, products, versions, seenAt]);
}

/** The auto-registration insert; `$t` tenant, `$i`/`$p`/`$v` arrays of ids, product ids and versions, `$s` the time seen. */
export function autoRegisterSql(t: string, i: string, p: string, v: string, s: string): string {
  return `INSERT INTO product_versions (id, tenant_id, product_id, version, source, first_seen, last_seen)
     SELECT id, ${t}, product_id, version, 'auto', ${s}, ${s} FROM unnest(${i}::uuid[], ${p}::uuid[], ${v}::text[]) AS b(id, product_id, version)
     ON CONFLICT (product_id, version) DO NOTHING`;
}

/** autoRegisterSql's three arrays, sorted so that two batches never lock the same pairs in opposite orders. */
export function autoRegisterParams(pairs: { productId: string; version: string }[]): [string[], string[], string[]] {
  const sorted = [...pairs].sort((a, b) => (a.productId + a.version < b.productId + b.version ? -1 : 1));
  return [sorted.map(() => uuidv7()), sorted.map((p) => p.productId), sorted.map((p) => p.version)];
}

/** Moves last_seen forward (and sets first_seen of a registered version the first time it is seen); called off the hot path, throttled by the caller. */
export async function touchVersions(q: Queryable, tenantId: string, pairs: { productId: string; version: string }[], seenAt: Date): Promise<void> {
  if (pairs.length === 0) return;
  await q.query(
    `UPDATE product_versions v SET last_seen = greatest(v.last_seen, $4), first_seen = coalesce(v.first_seen, $4)
       FROM unnest($2::uuid[], $3::text[]) AS b(product_id, version)
      WHERE v.tenant_id = $1 AND v.product_id = b.product_id AND v.version = b.version`,
    [tenantId, pairs.map((p) => p.productId), pairs.map((p) => p.version), seenAt],
  );
}

/** Registers a version explicitly; undefined when the (product, version) pair already exists. */
export async function insertRegisteredVersion(
  q: Queryable,
  tenantId: string,
  productId: string,
  version: string,
  releaseDate: string | null,
): Promise<VersionRow | undefined> {
  const rows = await q.query(
    `INSERT INTO product_versions (id, tenant_id, product_id, version, source, release_date)
     VALUES ($1, $2, $3, $4, 'registered', $5) ON CONFLICT (product_id, version) DO NOTHING RETURNING ${COLUMNS}`,
    [uuidv7(), tenantId, productId, version, releaseDate],
  );
  return rows[0] ? toVersion(rows[0]) : undefined;
}

export async function findVersion(q: Queryable, tenantId: string, productId: string, versionId: string): Promise<VersionRow | undefined> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM product_versions WHERE tenant_id = $1 AND product_id = $2 AND id = $3`, [tenantId, productId, versionId]);
  return rows[0] ? toVersion(rows[0]) : undefined;
}

/** release_date: null leaves it unchanged (there is no way to clear it); status: active | archived. */
export async function updateVersion(
  q: Queryable,
  tenantId: string,
  productId: string,
  versionId: string,
  patch: { release_date?: string | null | undefined; status?: 'active' | 'archived' | undefined },
): Promise<VersionRow | undefined> {
  const rows = await q.query(
    `UPDATE product_versions SET release_date = coalesce($4::date, release_date), status = coalesce($5, status)
      WHERE tenant_id = $1 AND product_id = $2 AND id = $3 RETURNING ${COLUMNS}`,
    [tenantId, productId, versionId, patch.release_date ?? null, patch.status ?? null],
  );
  return rows[0] ? toVersion(rows[0]) : undefined;
}

/** All versions of a product, for the `latest` selector. */
export async function allVersions(q: Queryable, tenantId: string, productId: string): Promise<VersionRow[]> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM product_versions WHERE tenant_id = $1 AND product_id = $2`, [tenantId, productId]);
  return rows.map(toVersion);
}
