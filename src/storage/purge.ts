import { lockReadModelWrites, type Queryable } from './db.js';
import { DERIVED_TABLES } from './read-model/tables.js';

// Removing a deleted product's data in bounded chunks. Each chunk is its own statement, so a
// crash loses at most the chunk in flight; the product stays `deleting` until nothing is left,
// which makes the purge resumable by simply running again.
const TABLES = ['events', 'sessions', 'exceptions', 'actor_links', ...DERIVED_TABLES] as const;

export async function productsBeingDeleted(q: Queryable, limit: number): Promise<{ id: string; tenant_id: string }[]> {
  return q.query('SELECT id, tenant_id FROM products WHERE status = $1 ORDER BY updated_at LIMIT $2', ['deleting', limit]);
}

/**
 * Deletes up to `limit` rows of the product from one table after another; returns how many went.
 * Run it in a transaction: it first takes the lock the rollup job's steps take (docs/data-rights.md),
 * so that a step that read the product's events or rows (a fold, a month merge rewriting them) commits
 * before the chunk picks its rows, and cannot write them back after the purge passed that table.
 */
export async function purgeProductChunk(q: Queryable, tenantId: string, productId: string, limit: number): Promise<number> {
  await lockReadModelWrites(q);
  for (const table of TABLES) {
    const rows = await q.query(
      `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE tenant_id = $1 AND product_id = $2 LIMIT $3)) RETURNING 1`,
      [tenantId, productId, limit],
    );
    if (rows.length > 0) return rows.length;
  }
  return 0;
}

/**
 * The last step: the product row itself (its versions and allowlist go with it). The tenant's
 * account and license snapshots and its coverage were built with the product's rows: they are due
 * at the rollup job's next run (rollup_dirty), not at the window's next move.
 */
export async function deleteProduct(q: Queryable, tenantId: string, productId: string): Promise<void> {
  await q.query(
    `WITH gone AS (DELETE FROM products WHERE tenant_id = $1 AND id = $2 AND status = 'deleting' RETURNING tenant_id)
     INSERT INTO rollup_dirty (tenant_id) SELECT tenant_id FROM gone ON CONFLICT DO NOTHING`,
    [tenantId, productId],
  );
}
