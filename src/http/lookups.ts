import { notFound } from '../errors.js';
import type { Db } from '../storage/db.js';
import { findProduct, type ProductRow } from '../storage/products.js';
import { cursorKey } from '../query/page.js';

/** A product of this tenant by id or slug; another tenant's id is the same 404 as a missing one. */
export async function requireProduct(db: Db, tenantId: string, idOrSlug: string): Promise<ProductRow> {
  const product = await findProduct(db, tenantId, idOrSlug);
  if (!product) throw notFound('product_not_found', 'product');
  return product;
}

/** The id inside a cursor of a list ordered by id. */
export function cursorId(cursor: string | undefined): string | undefined {
  return cursorKey(cursor, ['uuid'] as const)?.[0];
}
