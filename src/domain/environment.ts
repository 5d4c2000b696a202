import { findHostileContent, isPlainObject } from './record-rules.js';
import { isStorableString, truncateCodePoints } from './text.js';

// X-Environment-Data: base64 of a JSON object (OS, runtime, browser, screen, locale…), sent once
// per session or process. A malformed header is ignored, never a rejection.
const MAX_DECODED_BYTES = 16_384;

export function parseEnvironmentHeader(header: string | string[] | undefined): Record<string, unknown> | undefined {
  if (typeof header !== 'string' || header.length === 0 || header.length > (MAX_DECODED_BYTES * 4) / 3 + 4) return undefined;
  try {
    const text = Buffer.from(header, 'base64').toString('utf8');
    const value: unknown = JSON.parse(text);
    if (!isPlainObject(value) || findHostileContent(value, '') !== undefined) return undefined;
    return value;
  } catch {
    return undefined;
  }
}

/**
 * The keys of an environment that /v1/environment/* and the read model read (src/query/dimensions.ts
 * ENV_FIELDS, the fold's os / runtime / locale). An exception's environment_context replaces these
 * in the stored environment of its actor and session; other keys a header sent stay.
 */
export const ENVIRONMENT_FIELD_KEYS = [
  'os_name',
  'os',
  'os_version',
  'runtime_name',
  'runtime',
  'runtime_version',
  'browser',
  'locale',
  'arch',
  'screen',
] as const;

const VALUE_LIMIT = 256;

function scalar(v: unknown): string | number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'string' || v.length === 0 || !isStorableString(v)) return undefined;
  return truncateCodePoints(v, VALUE_LIMIT);
}

/** `{width, height}` as the clients send it (`{w, h}` read the same), or text such as `1920x1080`. */
function screenOf(v: unknown): { width: number; height: number } | string | undefined {
  if (!isPlainObject(v)) return typeof v === 'string' ? (scalar(v) as string | undefined) : undefined;
  const width = v.width ?? v.w;
  const height = v.height ?? v.h;
  return typeof width === 'number' && typeof height === 'number' && Number.isFinite(width) && Number.isFinite(height) ? { width, height } : undefined;
}

/**
 * An exception's environment_context as an environment (the shape X-Environment-Data is stored
 * in): the clients send the same object in both (docs/client.md), so the fields keep their names.
 * Only the fields the readers use are taken, each only when it has a usable value, so that any
 * shape is harmless: nothing usable is undefined and nothing is stored; it never refuses a record.
 */
export function environmentOfContext(context: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(context)) return undefined;
  const env: Record<string, unknown> = {};
  for (const key of ENVIRONMENT_FIELD_KEYS) {
    const value = key === 'screen' ? screenOf(context[key]) : scalar(context[key]);
    if (value !== undefined) env[key] = value;
  }
  return Object.keys(env).length > 0 ? env : undefined;
}
