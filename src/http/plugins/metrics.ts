import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { unauthorized } from '../../errors.js';
import { bearerToken } from './auth.js';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

// Prometheus metrics. No tenant labels: their number is unbounded.
export interface Metrics {
  registry: Registry;
  accepted: Counter;
  rejected: Counter<'reason'>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** With METRICS_TOKEN set, /metrics needs it as a Bearer token; without it, /metrics is open (bind HOST to a private address then). */
export function registerMetrics(app: FastifyInstance, token?: string): Metrics {
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
  const expected = token ? digest(token) : undefined;
  const onRequest = async (request: import('fastify').FastifyRequest) => {
    if (!expected) return;
    const given = bearerToken(request);
    if (!given || !timingSafeEqual(digest(given), expected)) throw unauthorized('GET /metrics needs the METRICS_TOKEN as a Bearer token');
  };
  app.get('/metrics', { schema: { hide: true }, onRequest }, async (_request, reply) => {
    reply.type(registry.contentType).send(await registry.metrics());
  });
  return { registry, accepted, rejected };
}
