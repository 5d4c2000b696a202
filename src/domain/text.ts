// Pure checks on strings, with the contract's units: "chars" are Unicode code points.

export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** True when s has more than max code points; cheap for the common short string. */
export function exceedsCodePoints(s: string, max: number): boolean {
  if (s.length <= max) return false;
  if (s.length > 2 * max) return true;
  return codePointLength(s) > max;
}

/** Cuts s to at most max code points, never inside a surrogate pair. */
export function truncateCodePoints(s: string, max: number): string {
  if (s.length <= max) return s;
  let n = 0;
  let i = 0;
  while (i < s.length && n < max) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
    n++;
  }
  return s.slice(0, i);
}

/** A string PostgreSQL can store and JSON can carry: no NUL, no lone surrogate. */
export function isStorableString(s: string): boolean {
  return !s.includes('\u0000') && s.isWellFormed();
}

const CONTROL = /\p{Cc}/u;
export const hasControlChars = (s: string): boolean => CONTROL.test(s);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NIL = '00000000-0000-0000-0000-000000000000';
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID.test(s) && s !== NIL;
/** Any UUID in its canonical text form, the nil UUID included (a lookup key, not a new record's id). */
export const isUuidText = (s: unknown): s is string => typeof s === 'string' && UUID.test(s);

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (year: number, month: number): number => (month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : DAYS_IN_MONTH[month]!);

/** RFC 3339 date-time with Z or an offset, and a real calendar date (no Feb 30). */
export function isRfc3339(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  const m = RFC3339.exec(s);
  if (!m) return false;
  const year = +m[1]!,
    month = +m[2]!,
    day = +m[3]!;
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  if (+m[4]! > 23 || +m[5]! > 59 || +m[6]! > 59) return false;
  // PostgreSQL refuses displacements past 15:59.
  if (m[8] !== undefined && (+m[9]! > 15 || +m[10]! > 59)) return false;
  return true;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
export function isCalendarDate(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  const m = DATE.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}
