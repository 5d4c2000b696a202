import { checkProperties, LIMITS, reservedPropertyKey } from '../../domain/record-rules.js';
import { isRfc3339 } from '../../domain/text.js';
import { linkActor, linkedUser, saveTraits, type Traits } from '../../storage/identity.js';
import { admitUnlessStored, checkCommon, fieldError, judged, productAndVersion, Refusal, registerIfNew, requiredText, type RecordContext } from './common.js';

// identify (CONTRACT.md): links a device's anonymous actor id to a user id, once. The same link
// again is accepted; a different user for the same anonymous id is 409 actor_already_linked.
// product_version may be null, and strict mode lets a null version through. Optional `traits`
// (a flat object with the limits of event properties) are kept per identified actor, the newest
// by identified_at; a 409 keeps none.

export const identify = judged(async (ctx: RecordContext, body: Record<string, unknown>): Promise<{ status: 'accepted' }> => {
  checkCommon(body);
  const anonymous = requiredText(body, 'anonymous_actor_id', LIMITS.actorId);
  const identified = requiredText(body, 'identified_actor_id', LIMITS.actorId);
  const at = body.identified_at ?? ctx.receivedAt.toISOString();
  if (!isRfc3339(at)) throw fieldError('identified_at', 'must be an RFC 3339 date-time with Z or an offset');
  const traits = body.traits ?? undefined;
  const bad = checkProperties(traits, 'traits');
  if (bad) throw fieldError(bad.field, bad.message);
  const reserved = reservedPropertyKey(traits);
  if (reserved) throw fieldError(`traits.${reserved}`, 'is a reserved key; accounts and licenses go in events');
  const { slug, version } = productAndVersion(body, false);
  // The same link again is a repeat, accepted even when its product or version is refused now.
  const verdict = await admitUnlessStored(ctx, slug, version, async () =>
    (await linkedUser(ctx.db, ctx.tenantId, anonymous)) === identified ? true : undefined,
  );
  if ('stored' in verdict) return { status: 'accepted' };
  const { admitted } = verdict;
  const linkedTo = await ctx.db.tx(async (q) => {
    await registerIfNew(q, ctx, admitted, version);
    const linked = await linkActor(
      q,
      ctx.tenantId,
      { anonymous, identified, identifiedAt: at, productId: admitted.product.id, productVersion: version },
      ctx.receivedAt,
    );
    if (linked === identified && traits !== undefined) await saveTraits(q, ctx.tenantId, identified, traits as Traits, at, ctx.receivedAt);
    return linked;
  });
  if (linkedTo !== identified) {
    throw new Refusal(409, 'actor_already_linked', `anonymous actor "${anonymous}" is already linked to another user`);
  }
  return { status: 'accepted' };
});
