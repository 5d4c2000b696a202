import type { App, AppContext } from '../context.js';

export function healthRoutes(app: App, ctx: AppContext): void {
  // Liveness: the process answers. Never touches the store, so a store outage does not get us restarted.
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  // Readiness: not shutting down, and the store answers within a second.
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (!ctx.ready.value) return reply.code(503).header('retry-after', '5').send({ status: 'shutting_down' });
    try {
      await Promise.race([ctx.db.ping(), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 1000).unref())]);
      return { status: 'ready' };
    } catch {
      return reply.code(503).header('retry-after', '5').send({ status: 'store_unavailable' });
    }
  });
}
