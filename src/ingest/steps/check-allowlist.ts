import { compileAllowlist, isAllowed } from '../../domain/allowlist.js';
import { rulesOf } from '../../storage/allowlists.js';
import type { BatchStep } from '../types.js';

/** Products with their allowlist on accept only listed (category, name) pairs: else ALLOWLIST_REJECTED. Independent of strict mode. */
export const checkAllowlist: BatchStep = {
  kind: 'batch',
  name: 'check-allowlist',
  async run(ctx, pending) {
    const guarded = [...ctx.products.values()].filter((p) => p.allowlist).map((p) => p.id);
    if (guarded.length === 0) return;
    const rules = new Map([...(await rulesOf(ctx.db, guarded))].map(([id, list]) => [id, compileAllowlist(list)]));
    for (const c of pending) {
      const e = c.event!;
      const list = rules.get(e.product_id);
      if (list && !isAllowed(list, e.category, e.name)) {
        c.rejection = { reason: 'ALLOWLIST_REJECTED', message: `(${e.category}, ${e.name}) is not on the allowlist of "${c.productSlug!}"` };
      }
    }
  },
};
