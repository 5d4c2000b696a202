import type { FastifyRequest } from 'fastify';
import { parseEnvironmentHeader } from '../../domain/environment.js';
import { LIMITS, isPlainObject } from '../../domain/record-rules.js';
import { exceedsCodePoints, isStorableString } from '../../domain/text.js';
import { upsertEnvironments } from '../../storage/identity.js';
import type { App, AppContext } from '../context.js';
import { registerHeldRefusals } from './held-refusal.js';

const MAX_PAIRS = 20;

/** The (actor, session) pairs a request body speaks for. */
function pairsOf(body: unknown): { actorId: string; sessionId: string | null }[] {
  const items = Array.isArray(body) ? body.slice(0, MAX_PAIRS * 5) : [body];
  const pairs: { actorId: string; sessionId: string | null }[] = [];
  for (const item of items) {
    if (!isPlainObject(item)) continue;
    const actor = item.actor_id ?? item.anonymous_actor_id;
    if (typeof actor !== 'string' || actor.length === 0 || exceedsCodePoints(actor, LIMITS.actorId) || !isStorableString(actor)) continue;
    const session =
      typeof item.session_id === 'string' && item.session_id.length <= 256 && isStorableString(item.session_id) ? item.session_id.toLowerCase() : null;
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

/** X-Environment-Data is kept for every ingestion request, refused ones included (held-refusal.ts). */
export function registerEnvironment(app: App, ctx: AppContext): void {
  registerHeldRefusals(app, (request) => keepEnvironment(ctx, request));
}
