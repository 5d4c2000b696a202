import { AppError, notFound } from '../errors.js';
import type { Db } from '../storage/db.js';
import { findProduct, type ProductRow } from '../storage/products.js';
import { decodeCursor, type CursorKey, type CursorPart } from '../domain/cursor.js';

/** A product of this tenant by id or slug; another tenant's id is the same 404 as a missing one. */
export async function requireProduct(db: Db, tenantId: string, idOrSlug: string): Promise<ProductRow> {
  const product = await findProduct(db, tenantId, idOrSlug);
  if (!product) throw notFound('product_not_found', 'product');
  return product;
}

/** The key inside a cursor of the given shape; a tampered or foreign cursor is a 400 naming `cursor`. */
export function cursorKey<const S extends readonly CursorPart[]>(cursor: string | undefined, shape: S): CursorKey<S> | undefined {
  if (cursor === undefined) return undefined;
  const key = decodeCursor(cursor, shape);
  if (!key) throw new AppError(400, 'validation_error', 'cursor: not a cursor this API returned', { errors: [{ field: 'cursor', message: 'not a cursor this API returned' }] });
  return key;
}

/** The id inside a cursor of a list ordered by id. */
export function cursorId(cursor: string | undefined): string | undefined {
  return cursorKey(cursor, ['uuid'] as const)?.[0];
}
