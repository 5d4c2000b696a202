import { LIMITS, truncate } from './validate.js';

// Turning whatever was thrown into the exception fields, and making every string storable:
// the server rejects a NUL or a lone surrogate (422, terminal), so they are replaced here.

// eslint-disable-next-line no-control-regex -- NUL is exactly what must be found
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function storable(s: string): string {
  return s.replace(UNSTORABLE, '\uFFFD');
}

export function describeError(error: unknown): { type: string; message?: string; stack?: string } {
  if (error instanceof Error || (typeof error === 'object' && error !== null && 'message' in error)) {
    const e = error as Error;
    const type = (typeof e.name === 'string' && e.name) || e.constructor?.name || 'Error';
    return {
      type: truncate(storable(type), 1024),
      ...(typeof e.message === 'string' && e.message ? { message: truncate(storable(e.message), LIMITS.message) } : {}),
      ...(typeof e.stack === 'string' && e.stack ? { stack: truncate(storable(e.stack), LIMITS.stackTrace) } : {}),
    };
  }
  let text: string;
  try {
    text = typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
  } catch {
    text = String(error);
  }
  return { type: 'Error', ...(text ? { message: truncate(storable(text), LIMITS.message) } : {}) };
}
