import { isRfc3339, isStorableString, isUuidText } from '../../domain/text.js';
import { LIMITS } from '../../domain/record-rules.js';
import { endSession, findSession, insertSession, keepPendingEnd, lockSession, takePendingEnd, type SessionStart } from '../../storage/sessions.js';
import {
  admitUnlessStored,
  checkCommon,
  fieldError,
  judged,
  productAndVersion,
  Refusal,
  registerIfNew,
  requiredText,
  unprocessable,
  type RecordContext,
} from './common.js';

// Sessions (SPEC.md "Session", CONTRACT.md "Sessions and exceptions"). Requests race: an end may
// arrive before its own start; it answers 404 but is kept an hour and applied when the start comes.

/** Session ids are the client's identifiers; UUIDs are compared in lowercase. */
export function normaliseSessionId(v: unknown): string {
  if (typeof v !== 'string' || v.length === 0) throw fieldError('session_id', 'is required');
  if (v.length > 256 || !isStorableString(v)) throw fieldError('session_id', 'must be at most 256 characters, with no NUL or lone surrogate');
  return isUuidText(v) ? v.toLowerCase() : v;
}

function timestamp(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (v === undefined || v === null) throw fieldError(field, 'is required');
  if (!isRfc3339(v)) throw fieldError(field, 'must be an RFC 3339 date-time with Z or an offset');
  return v;
}

/**
 * Validates a start (or a recovery's start context) and admits its product and version; `admitted`
 * is null when a rule refused them but the session is already stored (a retry: admitUnlessStored).
 */
async function judgeStart(ctx: RecordContext, body: Record<string, unknown>, sessionId: string) {
  checkCommon(body, { properties: true });
  const { slug, version } = productAndVersion(body);
  const start: SessionStart = {
    session_id: sessionId,
    product_id: '',
    product_version: version!,
    actor_id: requiredText(body, 'actor_id', LIMITS.actorId),
    account_id: (body.account_id as string | undefined) ?? null,
    license_id: (body.license_id as string | undefined) ?? null,
    properties: (body.properties as Record<string, unknown> | undefined) ?? null,
    started_at: timestamp(body, 'started_at'),
  };
  const verdict = await admitUnlessStored(ctx, slug, version, async () => ((await findSession(ctx.db, ctx.tenantId, sessionId)) ? true : undefined));
  if ('stored' in verdict) return { start, admitted: null };
  start.product_id = verdict.admitted.product.id;
  return { start, admitted: verdict.admitted };
}

export const startSession = judged(async (ctx: RecordContext, body: Record<string, unknown>): Promise<{ session_id: string; status: 'accepted' }> => {
  const sessionId = normaliseSessionId(body.session_id);
  const { start, admitted } = await judgeStart(ctx, body, sessionId);
  if (!admitted) return { session_id: sessionId, status: 'accepted' }; // already stored: a repeat
  await ctx.db.tx(async (q) => {
    await lockSession(q, ctx.tenantId, sessionId);
    await registerIfNew(q, ctx, admitted, start.product_version);
    const pendingEnd = await takePendingEnd(q, ctx.tenantId, sessionId, ctx.receivedAt);
    // CONTRACT.md: the start creates the session already ended. An early end stamped before the
    // start (a clock that moved between them) ends it at its start: a session never ends before it began.
    const end = pendingEnd && {
      ...pendingEnd,
      ended_at: Date.parse(pendingEnd.ended_at) < Date.parse(start.started_at) ? start.started_at : pendingEnd.ended_at,
    };
    await insertSession(q, ctx.tenantId, start, ctx.receivedAt, end);
  });
  return { session_id: sessionId, status: 'accepted' };
});

const CLIENT_END_REASONS = new Set(['normal', 'sdk_recovery']);

export const endSessionRequest = judged(
  async (ctx: RecordContext, body: Record<string, unknown>): Promise<{ session_id: string; status: 'ended' | 'already_ended' }> => {
    const sessionId = normaliseSessionId(body.session_id);
    const reason = body.end_reason ?? 'normal';
    if (reason === 'timeout')
      throw unprocessable('reserved_end_reason', 'end_reason "timeout" is reserved for the server', [{ field: 'end_reason', message: 'timeout is reserved' }]);
    if (typeof reason !== 'string' || !CLIENT_END_REASONS.has(reason)) throw fieldError('end_reason', 'must be normal or sdk_recovery');
    const endedAt = timestamp(body, 'ended_at');
    checkCommon(body);

    // A recovery that carries the start context creates the session and ends it in one step. The
    // context matters only for an unknown session (CONTRACT.md): a known one is ended whatever its
    // context says, so a refusal of the context waits until the session is found missing.
    const hasContext =
      reason === 'sdk_recovery' && body.actor_id !== undefined && body.started_at !== undefined && (body.product ?? body.source_app) !== undefined;
    let recovery: Awaited<ReturnType<typeof judgeStart>> | undefined;
    let contextRefused: Refusal | undefined;
    if (hasContext) {
      try {
        recovery = await judgeStart(ctx, body, sessionId);
      } catch (err) {
        if (!(err instanceof Refusal)) throw err;
        contextRefused = err;
      }
    }

    const outcome = await ctx.db.tx(async (q) => {
      await lockSession(q, ctx.tenantId, sessionId);
      const existing = await findSession(q, ctx.tenantId, sessionId);
      if (existing) {
        if (existing.ended_at) return { session_id: sessionId, status: 'already_ended' as const };
        if (Date.parse(endedAt) < Date.parse(existing.started_at)) throw fieldError('ended_at', "is earlier than the session's started_at");
        await endSession(q, ctx.tenantId, sessionId, endedAt, reason);
        return { session_id: sessionId, status: 'ended' as const };
      }
      if (contextRefused) throw contextRefused;
      if (recovery?.admitted) {
        if (Date.parse(endedAt) < Date.parse(recovery.start.started_at)) throw fieldError('ended_at', 'is earlier than started_at');
        await registerIfNew(q, ctx, recovery.admitted, recovery.start.product_version);
        await insertSession(q, ctx.tenantId, recovery.start, ctx.receivedAt, { ended_at: endedAt, end_reason: reason });
        return { session_id: sessionId, status: 'ended' as const };
      }
      await keepPendingEnd(q, ctx.tenantId, sessionId, endedAt, reason, ctx.receivedAt);
      return undefined; // committed, then answered 404
    });
    if (!outcome) throw new Refusal(404, 'session_not_found', `no session ${sessionId}; the end is kept for an hour in case its start is on the way`);
    return outcome;
  },
);
