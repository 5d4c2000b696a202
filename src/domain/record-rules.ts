import { exceedsCodePoints, hasControlChars, isStorableString } from './text.js';

// Rules that events, sessions, exceptions and identify share (SPEC.md "Limits").
export const LIMITS = {
  batchEvents: 1000,
  bodyBytes: 1_048_576,
  eventBytes: 4096,
  category: 128,
  name: 256,
  actorId: 512,
  product: 256,
  productVersion: 128,
  propertyKeys: 20,
  propertyKey: 64,
  propertyValue: 256,
  accountId: 256,
  licenseId: 256,
  message: 1000,
  stackTrace: 32_768,
  depth: 32,
} as const;

export const RESERVED_PROPERTY_KEYS: ReadonlySet<string> = new Set(['account_id', 'accountId', 'account', 'license_id', 'licenseId', 'license']);
export const HOSTILE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export type Problem = { field: string; message: string } | undefined;

export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Walks any JSON value for what no record may carry: keys that could pollute a prototype,
 * nesting past 32 levels, strings PostgreSQL cannot store, numbers past a double's range (1e400).
 * Integers beyond 2^53 are judged where they are properties (checkProperties); in an exception's
 * free-form context (breadcrumbs, environment_context) they are kept as the double they parse to.
 * `skip` names top-level keys whose own rules judge them (account_id, license_id), so they get
 * their specific code. `depth` is the level of `value` itself: -1 for a record whose fields'
 * values are what the limit measures.
 */
export function findHostileContent(value: unknown, path: string, depth = 0, skip?: ReadonlySet<string>): Problem {
  const found = hostile(value, depth, skip);
  if (!found) return undefined;
  // The field's path is built only for the problem found, on the way back up.
  let field = path;
  for (let i = found.path.length - 1; i >= 0; i--) {
    const seg = found.path[i]!;
    field = typeof seg === 'number' ? `${field}[${seg}]` : field ? `${field}.${seg}` : seg;
  }
  return { field: field || '(root)', message: found.message };
}

interface Found {
  message: string;
  /** Path segments from the problem up to the walk's start (innermost first). */
  path: (string | number)[];
}

function hostile(value: unknown, depth: number, skip?: ReadonlySet<string>): Found | undefined {
  if (typeof value === 'string') {
    return isStorableString(value) ? undefined : { message: 'contains a NUL character or a lone surrogate', path: [] };
  }
  // 1e400 parses to Infinity, which JSON (and jsonb) would hold as null: refused, never stored silently as null.
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { message: 'number out of range', path: [] };
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= LIMITS.depth) return { message: `nesting deeper than ${LIMITS.depth} levels`, path: [] };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = hostile(value[i], depth + 1);
      if (found) return (found.path.push(i), found);
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    // Checked first: an unstorable key must not reach a message or a field name.
    if (!isStorableString(key)) return { message: 'a key contains a NUL character or a lone surrogate', path: [] };
    if (HOSTILE_KEYS.has(key)) return { message: `the key "${key}" is not allowed`, path: [key] };
    if (skip?.has(key)) continue; // given to the walk's start only
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'boolean') continue;
    const found = hostile(v, depth + 1);
    if (found) return (found.path.push(key), found);
  }
  return undefined;
}

/** A required or optional bounded string field. */
export function checkString(obj: Record<string, unknown>, field: string, max: number, required: boolean, value = obj[field]): Problem {
  if (value === undefined || value === null) return required ? { field, message: 'is required' } : undefined;
  if (typeof value !== 'string') return { field, message: 'must be a string' };
  if (required && value.length === 0) return { field, message: 'must not be empty' };
  if (exceedsCodePoints(value, max)) return { field, message: `must be at most ${max} characters` };
  return undefined;
}

/** Flat properties: at most 20 keys of at most 64 chars, scalar values, strings of at most 256 chars. */
export function checkProperties(props: unknown, field = 'properties'): Problem {
  if (props === undefined || props === null) return undefined;
  if (!isPlainObject(props)) return { field, message: 'must be a flat object' };
  const keys = Object.keys(props);
  if (keys.length > LIMITS.propertyKeys) return { field, message: `must have at most ${LIMITS.propertyKeys} keys` };
  for (const key of keys) {
    if (key.length === 0) return { field, message: 'keys must not be empty' };
    if (exceedsCodePoints(key, LIMITS.propertyKey)) return { field: `${field}.${key}`, message: `key must be at most ${LIMITS.propertyKey} characters` };
    const v = props[key];
    if (typeof v === 'string') {
      if (exceedsCodePoints(v, LIMITS.propertyValue)) return { field: `${field}.${key}`, message: `must be at most ${LIMITS.propertyValue} characters` };
    } else if (typeof v === 'number') {
      // 1e400 parses to Infinity and 2^63 to a neighbour: neither would be stored as sent.
      if (!Number.isFinite(v)) return { field: `${field}.${key}`, message: 'number out of range' };
      if (Number.isInteger(v) && !Number.isSafeInteger(v))
        return { field: `${field}.${key}`, message: 'integer cannot be stored exactly (beyond 2^53); send it as a string' };
    } else if (typeof v !== 'boolean') {
      return { field: `${field}.${key}`, message: 'must be a string, number or boolean (no nested objects, arrays or null)' };
    }
  }
  return undefined;
}

export function reservedPropertyKey(props: unknown): string | undefined {
  if (!isPlainObject(props)) return undefined;
  for (const key of Object.keys(props)) if (RESERVED_PROPERTY_KEYS.has(key)) return key;
  return undefined;
}

/** account_id / license_id: absent, or 1–256 chars, not blank, no control characters. */
export function checkContextId(value: unknown, field: 'account_id' | 'license_id'): Problem {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return { field, message: 'must be a string' };
  if (value.trim().length === 0) return { field, message: 'must not be empty or whitespace' };
  if (exceedsCodePoints(value, LIMITS.accountId)) return { field, message: `must be at most ${LIMITS.accountId} characters` };
  if (hasControlChars(value) || !value.isWellFormed()) return { field, message: 'must not contain control characters' };
  return undefined;
}

/** product / product_version with the legacy names source_app / source_version as fallbacks. */
export function productOf(obj: Record<string, unknown>): unknown {
  return obj.product ?? obj.source_app;
}
export function productVersionOf(obj: Record<string, unknown>): unknown {
  return obj.product_version ?? obj.source_version;
}
