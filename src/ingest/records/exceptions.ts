import { environmentOfContext } from '../../domain/environment.js';
import { fingerprint } from '../../domain/fingerprint.js';
import { scrubText, scrubValue, wellFormedDeep } from '../../domain/scrub.js';
import { LIMITS } from '../../domain/record-rules.js';
import { isRfc3339, isStorableString, isUuid, truncateCodePoints } from '../../domain/text.js';
import { insertException, storedFingerprint } from '../../storage/exceptions.js';
import { admitUnlessStored, checkCommon, fieldError, judged, productAndVersion, registerIfNew, requiredText, type RecordContext } from './common.js';

// Exceptions (SPEC.md "Exception"): message and stack_trace are truncated, never rejected for
// length; breadcrumbs are any non-null JSON; an invalid session_id is dropped silently and an
// unknown one kept, so the session links up when (if) it arrives. Lone surrogates in breadcrumbs
// become U+FFFD instead of refusing the crash; the free text is scrubbed of query strings and
// secrets before it is stored or fingerprinted (src/domain/scrub.ts).

const TYPE_LIMIT = 1024;
const ID_LIMIT = 256;

function optionalText(body: Record<string, unknown>, field: string, max: number): string | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw fieldError(field, 'must be a string');
  return truncateCodePoints(v, max);
}

/** Cut to the limit (which also bounds the scrubber's work), scrubbed, and cut again: "[Filtered]" can be longer than what it replaced. */
function scrubbedText(body: Record<string, unknown>, field: string, max: number): string | null {
  const text = optionalText(body, field, max);
  return text === null ? null : truncateCodePoints(scrubText(text), max);
}

export const recordException = judged(
  async (ctx: RecordContext, raw: Record<string, unknown>): Promise<{ exception_id: string; status: 'accepted'; fingerprint: string }> => {
    const body = raw.breadcrumbs === undefined ? raw : { ...raw, breadcrumbs: wellFormedDeep(raw.breadcrumbs, LIMITS.depth + 1) };
    checkCommon(body);
    const exceptionId = requiredText(body, 'exception_id', ID_LIMIT);
    const exceptionType = requiredText(body, 'exception_type', TYPE_LIMIT);
    const severity = body.severity;
    if (severity !== 'fatal' && severity !== 'non_fatal') throw fieldError('severity', 'must be fatal or non_fatal');
    const occurredAt = body.occurred_at;
    if (!isRfc3339(occurredAt)) throw fieldError('occurred_at', occurredAt === undefined ? 'is required' : 'must be an RFC 3339 date-time with Z or an offset');
    const actorId = requiredText(body, 'actor_id', LIMITS.actorId);
    const { slug, version } = productAndVersion(body);
    const message = scrubbedText(body, 'message', LIMITS.message);
    const stackTrace = scrubbedText(body, 'stack_trace', LIMITS.stackTrace);
    const sessionId = typeof body.session_id === 'string' && isUuid(body.session_id) ? body.session_id.toLowerCase() : null;
    if (!isStorableString(exceptionId)) throw fieldError('exception_id', 'contains a NUL character or a lone surrogate');
    const environmentContext = body.environment_context === undefined || body.environment_context === null ? undefined : scrubValue(body.environment_context);

    const verdict = await admitUnlessStored(ctx, slug, version, () => storedFingerprint(ctx.db, ctx.tenantId, exceptionId));
    if ('stored' in verdict) return { exception_id: exceptionId, status: 'accepted', fingerprint: verdict.stored };
    const { admitted } = verdict;
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
          breadcrumbs: body.breadcrumbs === undefined || body.breadcrumbs === null ? undefined : scrubValue(body.breadcrumbs),
          session_id: sessionId,
          account_id: (body.account_id as string | undefined) ?? null,
          license_id: (body.license_id as string | undefined) ?? null,
          environment_context: environmentContext,
          // It feeds /v1/environment/* as X-Environment-Data does; a shape with nothing usable is left out, never refused.
          environment: environmentOfContext(environmentContext),
          fingerprint: fingerprint({ exceptionType, message, stackTrace }),
        },
        ctx.receivedAt,
      );
    });
    return { exception_id: exceptionId, status: 'accepted', fingerprint: fp };
  },
);
