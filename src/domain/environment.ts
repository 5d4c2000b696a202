import { findHostileContent, isPlainObject } from './record-rules.js';

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
