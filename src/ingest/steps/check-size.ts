import { LIMITS } from '../../domain/record-rules.js';
import { accept, reject, type Verdict } from '../types.js';

// Serialising every element just to measure it costs more than parsing the body, so we bound
// its UTF-8 JSON size from below and above in one walk, and serialise only when the bounds
// straddle the 4 KB limit. Each UTF-16 unit is 1–3 bytes of UTF-8, or up to 6 when escaped.
const DEPTH_CAP = 64;

function bounds(v: unknown, depth: number, acc: { lo: number; hi: number; deep: boolean }): void {
  switch (typeof v) {
    case 'string':
      acc.lo += v.length + 2;
      acc.hi += v.length * 6 + 2;
      return;
    case 'number':
      acc.lo += 1;
      acc.hi += 24;
      return;
    case 'boolean':
      acc.lo += 4;
      acc.hi += 5;
      return;
    case 'object':
      if (v === null) {
        acc.lo += 4;
        acc.hi += 4;
        return;
      }
      if (depth > DEPTH_CAP) {
        acc.deep = true;
        return;
      }
      if (Array.isArray(v)) {
        acc.lo += 2 + Math.max(0, v.length - 1);
        acc.hi += 2 + Math.max(0, v.length - 1);
        for (const x of v) bounds(x, depth + 1, acc);
        return;
      }
      {
        const keys = Object.keys(v);
        acc.lo += 2 + Math.max(0, keys.length - 1) + keys.length;
        acc.hi += 2 + Math.max(0, keys.length - 1) + keys.length;
        for (const k of keys) {
          bounds(k, depth + 1, acc);
          bounds((v as Record<string, unknown>)[k], depth + 1, acc);
        }
      }
      return;
    default:
      return;
  }
}

export function serialisedSize(v: unknown): number {
  const acc = { lo: 0, hi: 0, deep: false };
  bounds(v, 0, acc);
  if (!acc.deep && acc.hi <= LIMITS.eventBytes) return acc.lo; // certainly within the limit
  if (acc.lo > LIMITS.eventBytes) return acc.lo; // certainly over it
  try {
    return Buffer.byteLength(JSON.stringify(v));
  } catch {
    return Infinity; // too deep for JSON.stringify: far past 4 KB of brackets anyway
  }
}

/** event_too_large: the element re-serialised as UTF-8 JSON is over 4 KB. */
export function checkSize(raw: unknown): Verdict<unknown> {
  return serialisedSize(raw) > LIMITS.eventBytes ? reject('event_too_large', `the serialised event is over ${LIMITS.eventBytes} bytes`) : accept(raw);
}
