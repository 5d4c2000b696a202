import type { FastifyRequest } from 'fastify';
import { parseEnvironmentHeader } from '../../domain/environment.js';
import type { AppError } from '../../errors.js';
import { LIMITS, isPlainObject } from '../../domain/record-rules.js';
import { exceedsCodePoints, isStorableString } from '../../domain/text.js';
import { upsertEnvironments } from '../../storage/identity.js';
import type { AppContext } from '../context.js';
import { isIngestionPath } from './cors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A refusal (429, 402) held back until the body is read, to keep its X-Environment-Data. */
    deferredRefusal: AppError | null;
  }
}

const MAX_PAIRS = 20;

/** The (actor, session) pairs a request body speaks for. */
function pairsOf(body: unknown): { actorId: string; sessionId: string | null }[] {
  const items = Array.isArray(body) ? body.slice(0, MAX_PAIRS * 5) : [body];
  const pairs: { actorId: string; sessionId: string | null }[] = [];
  for (const item of items) {
    if (!isPlainObject(item)) continue;
    const actor = item.actor_id ?? item.anonymous_actor_id;
    if (typeof actor !== 'string' || actor.length === 0 || exceedsCodePoints(actor, LIMITS.actorId) || !isStorableString(actor)) continue;
    const session = typeof item.session_id === 'string' && item.session_id.length <= 256 && isStorableString(item.session_id) ? item.session_id.toLowerCase() : null;
    pairs.push({ actorId: actor, sessionId: session });
    if (pairs.length >= MAX_PAIRS) break;
  }
  return pairs;
}

/** Stores X-Environment-Data against the request's actors and sessions; a malformed header is ignored. */
export async function keepEnvironment(ctx: AppContext, request: FastifyRequest): Promise<void> {
  const data = parseEnvironmentHeader(request.headers['x-environment-data']);
  const tenantId = request.principal?.tenant.id;
  if (!data || !tenantId) return;
  await upsertEnvironments(ctx.db, tenantId, data, pairsOf(request.body), ctx.now()).catch((err: unknown) =>
    request.log.warn({ err }, 'could not keep X-Environment-Data'),
  );
}

/**
 * Clients send X-Environment-Data only once and mark it sent whatever the answer, so a refused
 * request (429, 402) that carries it is let through to the body, the environment kept, and then
 * refused. Requests without the header are refused before their body is read.
 */
export function deferRefusal(request: FastifyRequest, refusal: AppError): void {
  if (!request.headers['x-environment-data']) throw refusal;
  request.deferredRefusal = refusal;
}

export function registerEnvironment(app: import('../context.js').App, ctx: AppContext): void {
  app.decorateRequest('deferredRefusal', null);
  app.addHook('preValidation', async (request) => {
    if (!request.deferredRefusal || !isIngestionPath(request.routeOptions.url)) return;
    await keepEnvironment(ctx, request);
    throw request.deferredRefusal;
  });
}
