import { versionKey } from '../../storage/versions.js';
import type { BatchStep } from '../types.js';

/**
 * Strict products accept only registered, active versions (UNREGISTERED_VERSION); other products
 * auto-register a version on first sight (in the write transaction, race-free). The product's
 * strict flag is read in this batch's resolve step, so a toggle applies from the next batch on
 * and never to events already judged.
 */
export const checkVersion: BatchStep = {
  kind: 'batch',
  name: 'check-version',
  async run(ctx, pending) {
    const pairs = new Map<string, { productId: string; version: string }>();
    for (const c of pending) pairs.set(versionKey(c.event!.product_id, c.event!.product_version), { productId: c.event!.product_id, version: c.event!.product_version });
    const list = [...pairs.values()];
    const known = ctx.versionStatuses;
    const toRegister = new Map<string, { productId: string; version: string }>();
    for (const c of pending) {
      const e = c.event!;
      const key = versionKey(e.product_id, e.product_version);
      const status = known.get(key);
      if (ctx.products.get(c.productSlug!)!.strict) {
        if (status !== 'active') {
          c.rejection = {
            reason: 'UNREGISTERED_VERSION',
            message:
              status === undefined
                ? `version "${e.product_version}" is not registered and strict version mode is on for "${c.productSlug!}"`
                : `version "${e.product_version}" is ${status} and strict version mode is on for "${c.productSlug!}"`,
          };
        }
      } else if (status === undefined) {
        toRegister.set(key, pairs.get(key)!);
      }
    }
    ctx.newVersions = [...toRegister.values()];
    ctx.seenVersions = list.filter((p) => known.has(versionKey(p.productId, p.version)));
  },
};
