import type { FastifyInstance } from 'fastify';

/**
 * One line per request at `info`, when the response has gone: method, route (the template, e.g.
 * /v1/products/:id, never the raw URL, whose query string could hold a misplaced key), status,
 * duration, tenant id (once the key resolved) and request id. Never a header, so never
 * Authorization. ACCESS_LOG=false turns it off; so does any LOG_LEVEL above info. Health and
 * readiness probes (every few seconds from an orchestrator) are logged at debug.
 */
const PROBES = new Set(['/healthz', '/readyz']);

export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    request.log[PROBES.has(route) ? 'debug' : 'info'](
      {
        method: request.method,
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        ...(request.principal ? { tenant: request.principal.tenant.id } : {}),
      },
      'request',
    );
  });
}
