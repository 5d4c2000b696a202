import { AppError } from '../errors.js';
import { decodeCursor, encodeCursor } from '../storage/rows.js';

// One pagination for every query: `limit` (1–500; each list names its default) and an opaque
// `cursor`, base64url JSON of the sort key of the last row returned. A cursor is checked against
// the shape of its list's key: anything else (tampered, truncated, another list's) is a 400
// validation_error naming `cursor`, never a 500.
export const MAX_LIMIT = 500;

/** How a key element must look: a non-empty string of at most 1024 characters, or an ISO timestamp. */
export type KeyPart = 'text' | 'timestamp';

const badCursor = () => new AppError(400, 'validation_error', 'cursor: not a cursor this API returned', { errors: [{ field: 'cursor', message: 'invalid' }] });

function wellFormed(v: string): boolean {
  try {
    encodeURIComponent(v); // throws on a lone surrogate
    return true;
  } catch {
    return false;
  }
}

function fits(v: unknown, part: KeyPart): boolean {
  if (typeof v !== 'string' || v.length === 0 || v.length > 1024 || v.includes('\u0000') || !wellFormed(v)) return false;
  return part === 'text' || (/^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v)));
}

/** The key a cursor carries, checked against the list's key shape; undefined without a cursor. */
export function cursorKey(cursor: string | undefined, shape: readonly KeyPart[]): string[] | undefined {
  if (cursor === undefined) return undefined;
  const key = decodeCursor(cursor);
  if (!key || key.length !== shape.length || !key.every((v, i) => fits(v, shape[i]!))) throw badCursor();
  return key as string[];
}

/** A page from limit + 1 rows: the rows, and a cursor when there are more. */
export function pageOf<T>(rows: T[], limit: number, key: (row: T) => string[]): { data: T[]; next_cursor: string | null } {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return { data, next_cursor: rows.length > limit && last ? encodeCursor(key(last)) : null };
}
