import { AppError, notFound } from '../errors.js';
import type { Db } from '../storage/db.js';
import { findProduct, type ProductRow } from '../storage/products.js';
import { decodeCursor } from '../storage/rows.js';

/** A product of this tenant by id or slug; another tenant's id is the same 404 as a missing one. */
export async function requireProduct(db: Db, tenantId: string, idOrSlug: string): Promise<ProductRow> {
  const product = await findProduct(db, tenantId, idOrSlug);
  if (!product) throw notFound('product_not_found', 'product');
  return product;
}

/** The id inside a cursor this API returned; 400 for anything else. */
export function cursorId(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const key = decodeCursor(cursor);
  if (!key || typeof key[0] !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key[0])) {
    throw new AppError(400, 'validation_error', 'cursor: not a cursor this API returned', { errors: [{ field: 'cursor', message: 'not a cursor this API returned' }] });
  }
  return key[0];
}
