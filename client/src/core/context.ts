import type { CallContext } from './types.js';
import { checkContextId, checkText, LIMITS } from './validate.js';

// Who a call is about: the call's own fields over the bound scope's over the async scope's, and,
// outside server mode, the client's own identity under all of them.

/** Per-request scopes that follow async calls (Node: AsyncLocalStorage). */
export interface ScopeStore {
  run<T>(context: CallContext, fn: () => T): T;
  current(): CallContext | undefined;
}

/** Browsers have no async context: a scope lasts for the synchronous part of `fn` only. */
export function syncScopeStore(): ScopeStore {
  let current: CallContext | undefined;
  return {
    run(context, fn) {
      const previous = current;
      current = context;
      try {
        return fn();
      } finally {
        current = previous;
      }
    },
    current: () => current,
  };
}

/** `b`'s defined fields over `a`'s. */
export function merge<T extends object>(a: T | undefined, b: T | undefined): T {
  const out = { ...a } as Record<string, unknown>;
  if (b) for (const [k, v] of Object.entries(b)) if (v !== undefined) out[k] = v;
  return out as T;
}

/** A reason the context cannot be used, or undefined. */
export function checkContext(c: CallContext): string | undefined {
  if (c.actorId !== undefined) {
    const bad = checkText('actorId', c.actorId, LIMITS.actorId);
    if (bad) return bad;
  }
  if (c.sessionId !== undefined) {
    const bad = checkText('sessionId', c.sessionId, LIMITS.contextId);
    if (bad) return bad;
  }
  return (
    (c.accountId !== undefined ? checkContextId('accountId', c.accountId) : undefined) ??
    (c.licenseId !== undefined ? checkContextId('licenseId', c.licenseId) : undefined)
  );
}

/** A Date, epoch milliseconds or a date string as epoch milliseconds; undefined when it is none of these. */
export function timeOf(t: Date | number | string | undefined, now: number): number | undefined {
  if (t === undefined) return now;
  const ms = t instanceof Date ? t.getTime() : typeof t === 'number' ? t : typeof t === 'string' ? Date.parse(t) : NaN;
  return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? ms : undefined;
}
