import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

// Prometheus metrics. No tenant labels: their number is unbounded.
export interface Metrics {
  registry: Registry;
  accepted: Counter;
  rejected: Counter<'reason'>;
}

export function registerMetrics(app: FastifyInstance): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const accepted = new Counter({ name: 'tally_events_accepted_total', help: 'Events accepted (duplicates included)', registers: [registry] });
  const rejected = new Counter({ name: 'tally_events_rejected_total', help: 'Events rejected, by reason code', labelNames: ['reason'], registers: [registry] });
  const duration = new Histogram({
    name: 'tally_http_request_duration_seconds',
    help: 'HTTP request durations',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType).send(await registry.metrics());
  });
  return { registry, accepted, rejected };
}
