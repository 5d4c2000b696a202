import { catalogForBatch } from '../../storage/products.js';
import type { BatchStep } from '../types.js';

/**
 * Looks up every product slug of the batch at once, with the versions the batch names (for
 * check-version, in the same round trip); unknown or deleting products are UNRECOGNIZED_PRODUCT.
 */
export const resolveProduct: BatchStep = {
  kind: 'batch',
  name: 'resolve-product',
  async run(ctx, pending) {
    const slugs = [...new Set(pending.map((c) => c.productSlug!))];
    const versions = [...new Set(pending.map((c) => c.event!.product_version))];
    const catalog = await catalogForBatch(ctx.db, ctx.tenantId, slugs, versions);
    ctx.products = catalog.products;
    ctx.versionStatuses = catalog.versions;
    for (const c of pending) {
      const product = ctx.products.get(c.productSlug!);
      if (!product || product.status !== 'active') {
        c.rejection = {
          reason: 'UNRECOGNIZED_PRODUCT',
          message: product
            ? `product "${c.productSlug!}" is being deleted`
            : `product "${c.productSlug!}" is not a registered product of this tenant`,
        };
      } else {
        c.event!.product_id = product.id;
      }
    }
  },
};
