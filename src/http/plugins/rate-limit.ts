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
//
// "Cannot be reached" includes a Redis that stops answering on an open connection (a partition, a
// stalled server, a peer gone behind a half-open connection): TCP would hold the request for many
// minutes. A request waits at most REDIS_ANSWER_TIMEOUT_MS for Redis; after such a timeout the
// process stops asking Redis for REDIS_PAUSE_MS (a circuit breaker: its own windows decide, at once),
// drops the suspect connection for a fresh one, and then asks Redis again.

export interface RateLimiter {
  hit(key: string, limit: number): Promise<{ allowed: boolean; retryAfterSeconds: number }>;
  close(): Promise<void>;
}

const WINDOW_SECONDS = 60;
/**
 * How long a request waits for Redis's answer before this process's own window decides. Generous on
 * purpose: a live Redis answers in milliseconds, and a shorter timeout (250 ms, reverted in d766be2)
 * took a loaded but live Redis, on a loaded host, for a dead one and split the shared window. A
 * constant, not a setting: it only bounds how long a request can be held by a Redis that is gone.
 */
export const REDIS_ANSWER_TIMEOUT_MS = 2000;
/** After a timeout, how long the process uses its own windows without asking Redis. */
export const REDIS_PAUSE_MS = 5000;

class NoAnswer extends Error {
  override name = 'NoAnswer';
}

/**
 * `promise`, or a NoAnswer after `ms`. The timer's verdict waits for one turn of the event loop
 * (setImmediate runs after the loop has read its sockets): when the loop itself was blocked past
 * `ms`, an answer that is already in the socket is taken, not mistaken for a timeout.
 */
function answerWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (!settled) reject(new NoAnswer(`Redis did not answer within ${ms} ms`));
        }),
      ms,
    );
    promise.then(
      (value) => ((settled = true), clearTimeout(timer), resolve(value)),
      (err: unknown) => ((settled = true), clearTimeout(timer), reject(err)),
    );
  });
}

export function createRateLimiter(opts: { redisUrl?: string | undefined; log?: FastifyBaseLogger } = {}): RateLimiter {
  let redis: Redis | undefined;
  /** Until then Redis is not asked (the breaker is open). */
  let pausedUntil = 0;
  /** A timeout was logged and no answer has come since. */
  let outage = false;
  /** When the current connection was opened (its status "connect": the handshake is not answered yet). */
  let connectedAt = 0;
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
    redis.on('connect', () => (connectedAt = Date.now()));
  }
  /** Redis did not answer in time: stop asking it for a while, and dial a fresh connection (rejecting what waits on this one). */
  const pause = () => {
    if (Date.now() < pausedUntil) return; // already paused by a request that timed out with this one
    pausedUntil = Date.now() + REDIS_PAUSE_MS;
    if (!outage) {
      outage = true;
      opts.log?.warn(
        { timeoutMs: REDIS_ANSWER_TIMEOUT_MS, pauseMs: REDIS_PAUSE_MS },
        `Redis unreachable: no answer within ${REDIS_ANSWER_TIMEOUT_MS} ms; rate limits fall back to per-process windows for ${REDIS_PAUSE_MS / 1000} s, then Redis is asked again`,
      );
    }
    redis?.disconnect(true);
  };
  const answered = () => {
    if (!outage) return;
    outage = false;
    opts.log?.info('Redis answers again: rate limits use the shared windows');
  };
  /** Whether to ask Redis now: not while paused, nor on a connection whose handshake has gone unanswered for a timeout's length. */
  const askRedis = (): boolean => {
    if (!redis || Date.now() < pausedUntil) return false;
    if (redis.status === 'connect' && Date.now() - connectedAt > REDIS_ANSWER_TIMEOUT_MS) {
      pause();
      return false;
    }
    return true;
  };
  const limiters = new Map<number, { shared: RateLimiterAbstract | undefined; memory: RateLimiterAbstract }>();
  const limiterFor = (points: number) => {
    let l = limiters.get(points);
    if (!l) {
      const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS, keyPrefix: `rl${points}` });
      const shared = redis
        ? new RateLimiterRedis({ storeClient: redis, points, duration: WINDOW_SECONDS, keyPrefix: `tally:rl${points}`, rejectIfRedisNotReady: true })
        : undefined;
      l = { shared, memory };
      limiters.set(points, l);
    }
    return l;
  };
  /** The shared window; when Redis fails (not connected, an error, no answer in time), this process's own. */
  const consume = async (key: string, limit: number): Promise<void> => {
    const { shared, memory } = limiterFor(limit);
    if (!shared || !askRedis()) {
      await memory.consume(key);
      return;
    }
    try {
      await answerWithin(shared.consume(key), REDIS_ANSWER_TIMEOUT_MS);
      answered();
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        answered();
        throw err;
      }
      if (err instanceof NoAnswer) pause();
      // Not connected or failed: logged by the client's 'error' event, as a refused connection is.
      await memory.consume(key);
    }
  };
  return {
    async hit(key, limit) {
      try {
        await consume(key, limit);
        return { allowed: true, retryAfterSeconds: 0 };
      } catch (res) {
        if (res instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
        // Neither Redis nor the per-process window answered: fail open.
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
