import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../../errors.js';
import type { Plans } from '../../domain/plans.js';
import { principalOf } from './auth.js';
import { deferRefusal } from './environment.js';

/** Counts requests per key in fixed one-minute windows. */
export interface RateLimiter {
  hit(key: string, limit: number, now: number): Promise<{ allowed: boolean; retryAfterSeconds: number }>;
}

const WINDOW_MS = 60_000;

/** Per-process windows: exact for one server process (with several, see the shared limiter). */
export function createLocalRateLimiter(): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  return {
    async hit(key, limit, now) {
      const start = now - (now % WINDOW_MS);
      let w = windows.get(key);
      if (!w || w.start !== start) {
        if (windows.size > 100_000) for (const [k, v] of windows) if (v.start < start) windows.delete(k);
        w = { start, count: 0 };
        windows.set(key, w);
      }
      w.count++;
      return { allowed: w.count <= limit, retryAfterSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)) };
    },
  };
}

/** onRequest hook for POST /v1/events: the tenant's plan sets the requests per minute. No X-RateLimit-* headers, ever. */
export function rateLimitEvents(limiter: RateLimiter, plans: Plans, clock: () => number = Date.now): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const { tenant } = principalOf(request);
    const limit = plans[tenant.plan].requests_per_minute;
    const verdict = await limiter.hit(`rl:${tenant.id}`, limit, clock());
    if (!verdict.allowed) {
      deferRefusal(request, new AppError(429, 'rate_limited', `more than ${limit} requests per minute to POST /v1/events; retry after ${verdict.retryAfterSeconds} s`, {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      }));
    }
  };
}
