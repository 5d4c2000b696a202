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
    const pairs = new Map<string, { productId: string; version: string; strict: boolean; status: string | undefined }>();
    for (const c of pending) {
      const e = c.event!;
      const key = versionKey(e.product_id, e.product_version);
      let pair = pairs.get(key);
      if (!pair) {
        pair = { productId: e.product_id, version: e.product_version, strict: ctx.products.get(c.productSlug!)!.strict, status: ctx.versionStatuses.get(key) };
        pairs.set(key, pair);
      }
      if (pair.strict && pair.status !== 'active') {
        c.rejection = {
          reason: 'UNREGISTERED_VERSION',
          message:
            pair.status === undefined
              ? `version "${e.product_version}" is not registered and strict version mode is on for "${c.productSlug!}"`
              : `version "${e.product_version}" is ${pair.status} and strict version mode is on for "${c.productSlug!}"`,
        };
      }
    }
    const list = [...pairs.values()];
    ctx.newVersions = list.filter((p) => !p.strict && p.status === undefined).map(({ productId, version }) => ({ productId, version }));
    ctx.seenVersions = list.filter((p) => p.status !== undefined).map(({ productId, version }) => ({ productId, version }));
  },
};
