// The server's per-event rules (SPEC.md, CONTRACT.md), applied at track() so that an event the
// server would reject for good is refused at once, with a warning, instead of being queued,
// sent and dead-lettered. The server stays the judge; this only saves the round trip.

export const LIMITS = {
  eventBytes: 4096,
  batchBytes: 1_048_576,
  batchEvents: 1000,
  category: 128,
  name: 256,
  actorId: 512,
  product: 256,
  productVersion: 128,
  propertyKeys: 20,
  propertyKey: 64,
  propertyValue: 256,
  contextId: 256,
  message: 1000,
  stackTrace: 32_768,
} as const;

/** SPEC.md: account and license go in the top-level fields, never in properties. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['account_id', 'accountId', 'account', 'license_id', 'licenseId', 'license']);
const HOSTILE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// Every control character (C0, DEL and C1), as the server judges account and license ids (\p{Cc}).
const CONTROL = /\p{Cc}/u;

/** Code points, as the server counts "chars". */
export function charLength(s: string): number {
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

/** UTF-8 bytes of a string, without allocating an encoded copy. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** A string the server can store: no NUL, no lone surrogate, within `max` code points. */
export function checkText(field: string, v: unknown, max: number, required = true): string | undefined {
  if (typeof v !== 'string') return `${field} must be a string`;
  if (required && v.length === 0) return `${field} must not be empty`;
  if (v.includes('\u0000') || LONE_SURROGATE.test(v)) return `${field} holds a NUL or a lone surrogate`;
  if (charLength(v) > max) return `${field} is longer than ${max} characters`;
  return undefined;
}

/** account_id / license_id: 1-256 chars, not blank, no control characters. */
export function checkContextId(field: string, v: unknown): string | undefined {
  if (typeof v !== 'string' || v.trim().length === 0) return `${field} must be a non-blank string`;
  if (CONTROL.test(v) || LONE_SURROGATE.test(v)) return `${field} holds a control character or a lone surrogate`;
  if (charLength(v) > LIMITS.contextId) return `${field} is longer than ${LIMITS.contextId} characters`;
  return undefined;
}

export interface PropertyCheck {
  properties?: Record<string, string | number | boolean>;
  reason?: 'reserved_property_key' | 'invalid_event';
  message?: string;
}

/** Flat scalars only; undefined values are left out, as JSON would. */
export function checkProperties(input: unknown): PropertyCheck {
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) return { reason: 'invalid_event', message: 'properties must be a flat object' };
  const out: Record<string, string | number | boolean> = {};
  let keys = 0;
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    if (RESERVED_KEYS.has(k)) return { reason: 'reserved_property_key', message: `properties.${k} is reserved; use setAccount / setLicense` };
    if (HOSTILE_KEYS.has(k) || k.length === 0 || charLength(k) > LIMITS.propertyKey || checkText('key', k, LIMITS.propertyKey)) {
      return { reason: 'invalid_event', message: `property key "${k.slice(0, 80)}" is not allowed (1-${LIMITS.propertyKey} characters)` };
    }
    if (typeof v === 'string') {
      const bad = checkText(`properties.${k}`, v, LIMITS.propertyValue, false);
      if (bad) return { reason: 'invalid_event', message: bad };
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) {
        return { reason: 'invalid_event', message: `properties.${k} is not a number the server can store exactly; send it as a string` };
      }
    } else if (typeof v !== 'boolean') {
      return { reason: 'invalid_event', message: `properties.${k} must be a string, a finite number or a boolean` };
    }
    out[k] = v;
    keys++;
  }
  if (keys > LIMITS.propertyKeys) return { reason: 'invalid_event', message: `properties has ${keys} keys; at most ${LIMITS.propertyKeys}` };
  return keys > 0 ? { properties: out } : {};
}

/** Cuts a string to `max` code points without splitting a surrogate pair. */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end);
}
