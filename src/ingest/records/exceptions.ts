import { fingerprint } from '../../domain/fingerprint.js';
import { LIMITS } from '../../domain/record-rules.js';
import { isRfc3339, isStorableString, isUuid, truncateCodePoints } from '../../domain/text.js';
import { insertException } from '../../storage/exceptions.js';
import { admitProductVersion, checkCommon, fieldError, productAndVersion, registerIfNew, type RecordContext } from './common.js';

// Exceptions (SPEC.md "Exception"): message and stack_trace are truncated, never rejected for
// length; breadcrumbs are any non-null JSON; an invalid session_id is dropped silently and an
// unknown one kept, so the session links up when (if) it arrives.

const TYPE_LIMIT = 1024;
const ID_LIMIT = 256;

function requiredString(body: Record<string, unknown>, field: string, max: number): string {
  const v = body[field];
  if (v === undefined || v === null || v === '') throw fieldError(field, 'is required');
  if (typeof v !== 'string') throw fieldError(field, 'must be a string');
  if ([...v].length > max) throw fieldError(field, `must be at most ${max} characters`);
  return v;
}

function optionalText(body: Record<string, unknown>, field: string, max: number): string | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw fieldError(field, 'must be a string');
  return truncateCodePoints(v, max);
}

export async function recordException(ctx: RecordContext, body: Record<string, unknown>): Promise<{ exception_id: string; status: 'accepted'; fingerprint: string }> {
  checkCommon(body);
  const exceptionId = requiredString(body, 'exception_id', ID_LIMIT);
  const exceptionType = requiredString(body, 'exception_type', TYPE_LIMIT);
  const severity = body.severity;
  if (severity !== 'fatal' && severity !== 'non_fatal') throw fieldError('severity', 'must be fatal or non_fatal');
  const occurredAt = body.occurred_at;
  if (!isRfc3339(occurredAt)) throw fieldError('occurred_at', occurredAt === undefined ? 'is required' : 'must be an RFC 3339 date-time with Z or an offset');
  const actorId = requiredString(body, 'actor_id', LIMITS.actorId);
  const { slug, version } = productAndVersion(body);
  const message = optionalText(body, 'message', LIMITS.message);
  const stackTrace = optionalText(body, 'stack_trace', LIMITS.stackTrace);
  const sessionId = typeof body.session_id === 'string' && isUuid(body.session_id) ? body.session_id.toLowerCase() : null;
  if (!isStorableString(exceptionId)) throw fieldError('exception_id', 'contains a NUL character or a lone surrogate');

  const admitted = await admitProductVersion(ctx, slug, version);
  const fp = await ctx.db.tx(async (q) => {
    await registerIfNew(q, ctx, admitted, version);
    return insertException(
      q,
      ctx.tenantId,
      {
        exception_id: exceptionId,
        product_id: admitted.product.id,
        product_version: version!,
        exception_type: exceptionType,
        severity,
        occurred_at: occurredAt,
        actor_id: actorId,
        message,
        stack_trace: stackTrace,
        breadcrumbs: body.breadcrumbs ?? undefined,
        session_id: sessionId,
        account_id: (body.account_id as string | undefined) ?? null,
        license_id: (body.license_id as string | undefined) ?? null,
        environment_context: body.environment_context ?? undefined,
        fingerprint: fingerprint({ exceptionType, message, stackTrace }),
      },
      ctx.receivedAt,
    );
  });
  return { exception_id: exceptionId, status: 'accepted', fingerprint: fp };
}
