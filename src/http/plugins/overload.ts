import { monitorEventLoopDelay } from 'node:perf_hooks';
import underPressure from '@fastify/under-pressure';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App, AppContext } from '../context.js';
import { sendProblem } from './errors.js';

// A saturated event loop or a heap near its limit turns requests into 503 with Retry-After
// (clients retry; nothing is lost), so that the process sheds load instead of falling over.
// Liveness (/healthz) and /metrics are always answered: an overloaded process is alive, and
// restarting it would only lose its in-flight work.
const ALWAYS_ANSWERED = new Set(['/healthz', '/metrics']);
const SAMPLE_MS = 250;

const shed = (request: FastifyRequest, reply: FastifyReply, type: string, value: unknown) => {
  request.log.warn({ type, value }, 'under pressure: shedding load with 503');
  return sendProblem(reply, 503, 'overloaded', 'the server is overloaded; retry later', { headers: { 'retry-after': '2' } });
};

/**
 * The event loop counts as overloaded only when its delay has stayed past the limit for
 * `sustainMs`: every sample over that span was over the limit. A spike (start-up compiling code,
 * a garbage collection, a neighbour taking the CPU for a moment) is not overload, and refusing
 * a client's first requests after a restart for it would only make the clients retry.
 */
export function loopMonitor(limitMs: number, sustainMs: number, now: () => number = Date.now) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let overSince: number | undefined;
  let lastSample = performance.now();
  const timer = setInterval(() => {
    // The worst delay of the window, as the histogram saw it or as this timer's own lateness
    // shows it (a blocked loop delays both): each sample covers at least its own window.
    const at = performance.now();
    const delayMs = Math.max(histogram.max / 1e6, at - lastSample - SAMPLE_MS);
    lastSample = at;
    histogram.reset();
    if (delayMs <= limitMs) overSince = undefined;
    else overSince ??= now() - SAMPLE_MS;
  }, SAMPLE_MS);
  timer.unref();
  return {
    overloaded: () => overSince !== undefined && now() - overSince >= sustainMs,
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}

export async function registerOverloadProtection(app: App, ctx: AppContext): Promise<void> {
  // Heap and RSS do not spike the way the loop does: past their limits, the next request is shed.
  await app.register(underPressure, {
    maxEventLoopDelay: 0,
    maxHeapUsedBytes: ctx.config.maxHeapUsedBytes,
    maxRssBytes: ctx.config.maxRssBytes,
    sampleInterval: SAMPLE_MS,
    pressureHandler: (request, reply, type, value) => {
      if (ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
      shed(request, reply, type, value);
    },
  });
  const limit = ctx.config.maxEventLoopDelayMs;
  if (limit <= 0) return;
  const monitor = loopMonitor(limit, ctx.config.overloadSustainMs);
  app.addHook('onRequest', async (request, reply) => {
    if (!monitor.overloaded() || ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
    return shed(request, reply, 'eventLoopDelay', limit);
  });
  app.addHook('onClose', async () => monitor.stop());
}
