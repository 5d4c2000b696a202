import { AppError } from '../errors.js';
import { decodeCursor, encodeCursor, type CursorKey, type CursorPart } from '../domain/cursor.js';

// One pagination for every query: `limit` (1–500; each list names its default) and an opaque
// `cursor`, base64url JSON of the sort key of the last row returned (src/domain/cursor.ts). A
// cursor is checked against the shape of its list's key, part by part (an id, a timestamp
// PostgreSQL accepts, text without NUL): anything else (tampered, truncated, another list's) is a
// 400 validation_error naming `cursor`, never a 500.
export const MAX_LIMIT = 500;

export type KeyPart = CursorPart;

const badCursor = () =>
  new AppError(400, 'validation_error', 'cursor: not a cursor this API returned', { errors: [{ field: 'cursor', message: 'not a cursor this API returned' }] });

/** The key a cursor carries, checked against the list's key shape; undefined without a cursor. */
export function cursorKey<const S extends readonly CursorPart[]>(cursor: string | undefined, shape: S): CursorKey<S> | undefined {
  if (cursor === undefined) return undefined;
  const key = decodeCursor(cursor, shape);
  if (!key) throw badCursor();
  return key;
}

/** A page from limit + 1 rows: the rows, and a cursor when there are more. */
export function pageOf<T>(rows: T[], limit: number, key: (row: T) => readonly (string | number)[]): { data: T[]; next_cursor: string | null } {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return { data, next_cursor: rows.length > limit && last ? encodeCursor(key(last)) : null };
}
