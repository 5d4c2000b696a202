import { v7 as uuidv7 } from 'uuid';
import { catalogOf } from './catalog.js';
import type { Db, Queryable } from './db.js';
import { versionKey } from './versions.js';
import { iso } from './rows.js';
import { isUuidText } from '../domain/text.js';

export interface ProductRow {
  id: string;
  slug: string;
  name: string;
  status: 'active' | 'deleting';
  strict_versions_enabled: boolean;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, slug, name, status, strict_versions_enabled, created_at, updated_at';

function toProduct(r: Record<string, unknown>): ProductRow {
  return {
    id: r.id as string,
    slug: r.slug as string,
    name: r.name as string,
    status: r.status as ProductRow['status'],
    strict_versions_enabled: r.strict_versions_enabled as boolean,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

/** Inserts a product; undefined when the tenant already has one with this slug. */
export async function insertProduct(q: Queryable, tenantId: string, slug: string, name: string): Promise<ProductRow | undefined> {
  const rows = await q.query(
    `INSERT INTO products (id, tenant_id, slug, name) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, slug) DO NOTHING RETURNING ${COLUMNS}`,
    [uuidv7(), tenantId, slug, name],
  );
  return rows[0] ? toProduct(rows[0]) : undefined;
}

/** A product by its id or its slug. */
export async function findProduct(q: Queryable, tenantId: string, idOrSlug: string): Promise<ProductRow | undefined> {
  const rows = isUuidText(idOrSlug)
    ? await q.query(`SELECT ${COLUMNS} FROM products WHERE tenant_id = $1 AND (id = $2::uuid OR slug = $3) ORDER BY (id = $2::uuid) DESC LIMIT 1`, [
        tenantId,
        idOrSlug,
        idOrSlug,
      ])
    : await q.query(`SELECT ${COLUMNS} FROM products WHERE tenant_id = $1 AND slug = $2`, [tenantId, idOrSlug]);
  return rows[0] ? toProduct(rows[0]) : undefined;
}

export async function listProducts(q: Queryable, tenantId: string, limit: number, afterId: string | undefined): Promise<ProductRow[]> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM products WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid) ORDER BY id LIMIT $3`, [
    tenantId,
    afterId ?? null,
    limit,
  ]);
  return rows.map(toProduct);
}

export async function updateProduct(
  q: Queryable,
  tenantId: string,
  productId: string,
  patch: { strict_versions_enabled?: boolean; name?: string },
): Promise<ProductRow | undefined> {
  const rows = await q.query(
    `UPDATE products SET strict_versions_enabled = coalesce($3, strict_versions_enabled), name = coalesce($4, name), updated_at = now()
      WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, productId, patch.strict_versions_enabled ?? null, patch.name ?? null],
  );
  return rows[0] ? toProduct(rows[0]) : undefined;
}

export async function markProductDeleting(q: Queryable, tenantId: string, productId: string): Promise<ProductRow | undefined> {
  const rows = await q.query(`UPDATE products SET status = 'deleting', updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [
    tenantId,
    productId,
  ]);
  return rows[0] ? toProduct(rows[0]) : undefined;
}

export interface ProductForIngest {
  id: string;
  slug: string;
  status: string;
  strict: boolean;
  allowlist: boolean;
}

/** A batch's products with the statuses of the versions it names: what ingestion judges by. */
export interface BatchCatalog {
  products: ReadonlyMap<string, ProductForIngest>;
  /** Registered versions by versionKey(product id, version): their status. */
  versions: ReadonlyMap<string, string>;
}

/**
 * The batch's products by slug, and the registered versions among those the batch names, in one
 * statement (one round trip per batch, whatever it holds).
 */
export function catalogForBatch(db: Db, tenantId: string, slugs: string[], versions: string[]): Promise<BatchCatalog> {
  const key = `catalog ${tenantId} ${JSON.stringify([[...slugs].sort(), [...versions].sort()])}`;
  return catalogOf(db).read(key, () => readCatalog(db, tenantId, slugs, versions));
}

async function readCatalog(q: Queryable, tenantId: string, slugs: string[], versions: string[]): Promise<BatchCatalog> {
  const rows = await q.query<{
    id: string;
    slug: string;
    status: string;
    strict_versions_enabled: boolean;
    allowlist_enabled: boolean;
    version: string | null;
    version_status: string | null;
  }>(
    `SELECT p.id, p.slug, p.status, p.strict_versions_enabled, p.allowlist_enabled, v.version, v.status AS version_status
       FROM products p
       LEFT JOIN product_versions v ON v.product_id = p.id AND v.version = ANY($3::text[])
      WHERE p.tenant_id = $1 AND p.slug = ANY($2::text[])`,
    [tenantId, slugs, versions],
  );
  const products = new Map<string, ProductForIngest>();
  const statuses = new Map<string, string>();
  for (const r of rows) {
    if (!products.has(r.slug)) {
      products.set(r.slug, { id: r.id, slug: r.slug, status: r.status, strict: r.strict_versions_enabled, allowlist: r.allowlist_enabled });
    }
    if (r.version !== null) statuses.set(versionKey(r.id, r.version), r.version_status!);
  }
  return { products, versions: statuses };
}
