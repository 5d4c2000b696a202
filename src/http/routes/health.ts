import type { App, AppContext } from '../context.js';
import { sendProblem } from '../plugins/errors.js';

export function healthRoutes(app: App, ctx: AppContext): void {
  // Liveness: the process answers. Never touches the store, so a store outage does not get us restarted.
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  // Readiness: not shutting down, and the store answers within a second.
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    // Not ready is an error answer like any other: problem+json with a code (CONTRACT.md).
    const retry = { headers: { 'retry-after': '5' } };
    if (!ctx.ready.value) return sendProblem(reply, 503, 'shutting_down', 'the server is shutting down', retry);
    try {
      await Promise.race([ctx.db.ping(), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 1000).unref())]);
      return { status: 'ready' };
    } catch {
      return sendProblem(reply, 503, 'store_unavailable', 'the store does not answer', retry);
    }
  });
}
