// Small conversions shared by the query functions: both drivers return timestamptz as Date.
export function iso(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.toISOString();
  return new Date(String(v)).toISOString();
}

export function isoDate(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  return String(v).slice(0, 10);
}

export { encodeCursor } from '../domain/cursor.js';

/** A timestamptz as exact UTC text (microseconds, one width, so it orders as the instants do): a keyset cursor's key. */
export const exactTime = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
