import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { AppError } from '../../errors.js';
import { isPlainObject } from '../../domain/record-rules.js';
import type { RecordKind } from '../../storage/invalid-events.js';
import { judged, keepDeadLetter, unprocessable, type RecordContext, type RecordHandler } from '../../ingest/records/common.js';
import { recordException } from '../../ingest/records/exceptions.js';
import { identify } from '../../ingest/records/identify.js';
import { endSessionRequest, startSession } from '../../ingest/records/sessions.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { keepEnvironment } from '../plugins/environment.js';
import { requireAccepting } from '../plugins/billing.js';
import { fieldErrors } from '../plugins/errors.js';
import { problems } from '../schemas/common.js';
import { Accepted, ExceptionAccepted, ExceptionBody, IdentifyBody, SessionAccepted, SessionEnd, SessionEnded, SessionStart } from '../schemas/records.js';
import { refuseEncodedBody } from './events.js';

/** The body's shape as the route schema judged it: a refusal of the record like any other. */
const shapeChecked = (request: FastifyRequest) =>
  judged(async (_ctx, body) => {
    if (!isPlainObject(body)) throw unprocessable('validation_error', 'the body must be a JSON object', [{ field: 'body', message: 'must be an object' }]);
    if (request.validationError) {
      const errors = fieldErrors(request.validationError as Parameters<typeof fieldErrors>[0]);
      throw unprocessable('validation_error', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
    }
  });

/**
 * One route per single-record kind. The record's verdict is the answer; a refusal is problem+json,
 * and every 422 is kept in the Invalid Events list with its kind, schema (type) failures included,
 * so validation is attached to the request rather than thrown before the handler.
 */
function recordRoute(
  app: App,
  ctx: AppContext,
  path: string,
  kind: RecordKind,
  spec: { summary: string; body: TSchema; ok: TSchema; errors: number[] },
  handler: RecordHandler<object>,
): void {
  app.post(
    path,
    {
      onRequest: [requireKey(ctx.db, ['ingest']), requireAccepting(ctx), refuseEncodedBody],
      config: { ownBodyRules: true },
      attachValidation: true,
      schema: {
        summary: spec.summary,
        tags: ['ingestion'],
        security: [{ bearer: [] }],
        body: spec.body,
        // Every record route reads a JSON body: one that is not JSON is a 400, one over 1 MB a 413.
        response: { 200: spec.ok, ...problems(...[400, 413, ...spec.errors].sort((a, b) => a - b)) },
      },
    },
    async (request: FastifyRequest) => {
      const { tenant, keyId } = principalOf(request);
      const rctx: RecordContext = { db: ctx.db, tenantId: tenant.id, apiKeyId: keyId, receivedAt: ctx.now() };
      const body = request.body as Record<string, unknown>;
      await keepEnvironment(ctx, request);
      const shape = await shapeChecked(request)(rctx, body);
      const verdict = shape.ok ? await handler(rctx, body) : shape;
      if (verdict.ok) return verdict.value;
      const { refusal } = verdict;
      if (refusal.status === 422) await keepDeadLetter(rctx, kind, body, refusal, request.log);
      throw new AppError(refusal.status, refusal.code, refusal.message, refusal.errors ? { errors: refusal.errors } : {});
    },
  );
}

export function recordRoutes(app: App, ctx: AppContext): void {
  recordRoute(
    app,
    ctx,
    '/v1/events/sessions',
    'session',
    { summary: 'Start a session', body: SessionStart, ok: SessionAccepted, errors: [401, 402, 403, 415, 422, 503] },
    startSession,
  );
  recordRoute(
    app,
    ctx,
    '/v1/events/sessions/end',
    'session_end',
    { summary: 'End a session (normal | sdk_recovery)', body: SessionEnd, ok: SessionEnded, errors: [401, 402, 403, 404, 415, 422, 503] },
    endSessionRequest,
  );
  recordRoute(
    app,
    ctx,
    '/v1/events/exceptions',
    'exception',
    { summary: 'Record an exception', body: ExceptionBody, ok: ExceptionAccepted, errors: [401, 402, 403, 415, 422, 503] },
    recordException,
  );
  recordRoute(
    app,
    ctx,
    '/v1/actors/identify',
    'identify',
    { summary: 'Link an anonymous actor to an identified user', body: IdentifyBody, ok: Accepted, errors: [401, 402, 403, 409, 415, 422, 503] },
    identify,
  );
}
