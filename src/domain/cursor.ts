import { isRfc3339, isStorableString, isUuidText } from './text.js';

// One cursor format for every list: base64url JSON of the sort key of the last row returned.
// A cursor is client input like any other: decoding checks its shape part by part, so a tampered
// one is refused before it reaches a query.
export type CursorPart = 'uuid' | 'text' | 'timestamp' | 'int';
type PartValue<P extends CursorPart> = P extends 'int' ? number : string;
export type CursorKey<S extends readonly CursorPart[]> = { [K in keyof S]: PartValue<S[K]> };

const MAX_TEXT = 1024;

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

const partOk: Record<CursorPart, (v: unknown) => boolean> = {
  uuid: (v) => isUuidText(v),
  text: (v) => typeof v === 'string' && v.length <= MAX_TEXT && isStorableString(v),
  timestamp: (v) => isRfc3339(v),
  int: (v) => typeof v === 'number' && Number.isSafeInteger(v),
};

/** The key inside a cursor this API returned, or undefined when it is anything else. */
export function decodeCursor<const S extends readonly CursorPart[]>(cursor: string, shape: S): CursorKey<S> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(cursor)) return undefined;
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(key) || key.length !== shape.length) return undefined;
  return shape.every((part, i) => partOk[part](key[i])) ? (key as CursorKey<S>) : undefined;
}
