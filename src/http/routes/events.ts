import type { FastifyRequest } from 'fastify';
import { AppError } from '../../errors.js';
import { billingPeriod } from '../../domain/billing-period.js';
import { LIMITS } from '../../domain/record-rules.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { rateLimitEvents } from '../plugins/rate-limit.js';
import { keepEnvironment } from '../plugins/environment.js';
import { requireAccepting } from '../plugins/billing.js';
import { problems } from '../schemas/common.js';
import { BatchResponse, EventBatch } from '../schemas/events.js';

/** Ingestion takes plain JSON only: a compressed body is refused before it is read. */
export async function refuseEncodedBody(request: FastifyRequest): Promise<void> {
  const enc = request.headers['content-encoding'];
  if (enc && enc.toLowerCase() !== 'identity') {
    throw new AppError(415, 'unsupported_media_type', `Content-Encoding ${enc} is not supported; send the body uncompressed`);
  }
}

// The envelope only: a loose batch at the route, strict rules per element in the pipeline, so
// that one bad element is rejected alone (207) instead of failing the whole batch.
function envelope(): (body: unknown) => boolean {
  return (body) => {
    if (!Array.isArray(body)) throw new AppError(400, 'invalid_batch', 'the body must be a JSON array of events');
    if (body.length === 0) throw new AppError(400, 'invalid_batch', 'the batch is empty');
    if (body.length > LIMITS.batchEvents) throw new AppError(400, 'invalid_batch', `the batch has ${body.length} events; at most ${LIMITS.batchEvents}`);
    return true;
  };
}

export function eventRoutes(app: App, ctx: AppContext): void {
  app.post(
    '/v1/events',
    {
      onRequest: [requireKey(ctx.db, ['ingest']), requireAccepting(ctx), refuseEncodedBody, rateLimitEvents(ctx.limiter, ctx.plans)],
      config: { ownBodyRules: true },
      validatorCompiler: () => envelope(),
      schema: {
        summary: 'Send a batch of events',
        description: '200 when every event is accepted, 207 when at least one is rejected; one result per element, in order.',
        tags: ['ingestion'],
        security: [{ bearer: [] }],
        body: EventBatch,
        response: { 200: BatchResponse, 207: BatchResponse, ...problems(400, 401, 402, 403, 413, 415, 429, 503) },
      },
    },
    async (request, reply) => {
      const { tenant, keyId } = principalOf(request);
      const receivedAt = ctx.now();
      const outcome = await ctx.events.ingest({
        tenantId: tenant.id,
        apiKeyId: keyId,
        receivedAt,
        periodStart: billingPeriod(new Date(tenant.cycle_anchor), receivedAt).start,
        allotment: ctx.plans[tenant.plan].monthly_events,
        capped: ctx.plans[tenant.plan].policy === 'cap',
        elements: request.body as unknown[],
      });
      await keepEnvironment(ctx, request);
      ctx.metrics.accepted.inc(outcome.accepted);
      for (const r of outcome.results) if (r.status === 'rejected') ctx.metrics.rejected.inc({ reason: r.reason });
      // Serialised here rather than by the response schema: 1000 results are the hot path.
      return reply
        .code(outcome.rejected > 0 ? 207 : 200)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ accepted: outcome.accepted, rejected: outcome.rejected, results: outcome.results }) as never);
    },
  );
}
