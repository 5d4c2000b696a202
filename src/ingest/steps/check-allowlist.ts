import { compileAllowlist, isAllowed } from '../../domain/allowlist.js';
import { rulesOf } from '../../storage/allowlists.js';
import type { Queryable } from '../../storage/db.js';
import { accept, reject, type ResolvedEvent, type Verdict } from '../types.js';

/** Products with their allowlist on accept only listed (category, name) pairs: else ALLOWLIST_REJECTED. Independent of strict mode. */
export async function checkAllowlist(q: Queryable, events: readonly ResolvedEvent[]): Promise<Verdict<ResolvedEvent>[]> {
  const guarded = [...new Set(events.filter((e) => e.product.allowlist).map((e) => e.product.id))];
  if (guarded.length === 0) return events.map(accept);
  const lists = new Map([...(await rulesOf(q, guarded))].map(([id, rules]) => [id, compileAllowlist(rules)]));
  return events.map((e) => {
    const list = lists.get(e.product.id);
    return list && !isAllowed(list, e.category, e.name)
      ? reject('ALLOWLIST_REJECTED', `(${e.category}, ${e.name}) is not on the allowlist of "${e.productSlug}"`)
      : accept(e);
  });
}
