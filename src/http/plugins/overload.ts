import underPressure from '@fastify/under-pressure';
import type { App, AppContext } from '../context.js';
import { sendProblem } from './errors.js';

// A saturated event loop or a heap near its limit turns requests into 503 with Retry-After
// (clients retry; nothing is lost), so that the process sheds load instead of falling over.
// Liveness (/healthz) and /metrics are always answered: an overloaded process is alive, and
// restarting it would only lose its in-flight work.
const ALWAYS_ANSWERED = new Set(['/healthz', '/metrics']);

export async function registerOverloadProtection(app: App, ctx: AppContext): Promise<void> {
  await app.register(underPressure, {
    maxEventLoopDelay: ctx.config.maxEventLoopDelayMs,
    maxHeapUsedBytes: ctx.config.maxHeapUsedBytes,
    maxRssBytes: ctx.config.maxRssBytes,
    sampleInterval: 250,
    pressureHandler: (request, reply, type, value) => {
      if (ALWAYS_ANSWERED.has(request.routeOptions.url ?? '')) return;
      request.log.warn({ type, value }, 'under pressure: shedding load with 503');
      sendProblem(reply, 503, 'overloaded', 'the server is overloaded; retry later', { headers: { 'retry-after': '2' } });
    },
  });
}
