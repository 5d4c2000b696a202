import type { FastifyBaseLogger, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../../errors.js';
import type { Plans } from '../../domain/plans.js';
import { principalOf } from './auth.js';
import { holdRefusal } from './held-refusal.js';

// Requests per minute per tenant on POST /v1/events (rate-limiter-flexible: fixed one-minute
// windows from a key's first request). With REDIS_URL the windows live in Redis and hold across
// every server process; when Redis cannot be reached each process falls back to its own
// in-memory windows (fail open to a per-process limit, logged), and returns to Redis when it is back.

export interface RateLimiter {
  hit(key: string, limit: number): Promise<{ allowed: boolean; retryAfterSeconds: number }>;
  close(): Promise<void>;
}

const WINDOW_SECONDS = 60;

export function createRateLimiter(opts: { redisUrl?: string | undefined; log?: FastifyBaseLogger } = {}): RateLimiter {
  let redis: Redis | undefined;
  if (opts.redisUrl) {
    redis = new Redis(opts.redisUrl, {
      // Fail fast rather than queue: a request must not wait for Redis to come back.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
    let lastWarned = 0;
    redis.on('error', (err: Error) => {
      if (Date.now() - lastWarned < 30_000) return;
      lastWarned = Date.now();
      opts.log?.warn({ err: err.message }, 'Redis unreachable: rate limits fall back to per-process windows');
    });
  }
  const limiters = new Map<number, RateLimiterAbstract>();
  const limiterFor = (points: number): RateLimiterAbstract => {
    let l = limiters.get(points);
    if (!l) {
      const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS, keyPrefix: `rl${points}` });
      l = redis
        ? new RateLimiterRedis({
            storeClient: redis,
            points,
            duration: WINDOW_SECONDS,
            keyPrefix: `tally:rl${points}`,
            rejectIfRedisNotReady: true,
            insuranceLimiter: memory,
          })
        : memory;
      limiters.set(points, l);
    }
    return l;
  };
  return {
    async hit(key, limit) {
      try {
        await limiterFor(limit).consume(key);
        return { allowed: true, retryAfterSeconds: 0 };
      } catch (res) {
        if (res instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
        // Neither Redis nor the insurance limiter answered: fail open.
        opts.log?.warn({ err: res }, 'rate limiter failed; request let through');
        return { allowed: true, retryAfterSeconds: 0 };
      }
    },
    async close() {
      redis?.disconnect();
    },
  };
}

/** onRequest hook for POST /v1/events: the tenant's plan sets the requests per minute. No X-RateLimit-* headers, ever. */
export function rateLimitEvents(limiter: RateLimiter, plans: Plans): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const { tenant } = principalOf(request);
    const limit = plans[tenant.plan].requests_per_minute;
    if (limit === null) return; // the unlimited plan
    const verdict = await limiter.hit(tenant.id, limit);
    if (!verdict.allowed) {
      holdRefusal(
        request,
        new AppError(429, 'rate_limited', `more than ${limit} requests per minute to POST /v1/events; retry after ${verdict.retryAfterSeconds} s`, {
          headers: { 'retry-after': String(verdict.retryAfterSeconds) },
        }),
      );
    }
  };
}
