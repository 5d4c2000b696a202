import { productsBySlugs } from '../../storage/products.js';
import type { BatchStep } from '../types.js';

/** Looks up every product slug of the batch at once; unknown or deleting products are UNRECOGNIZED_PRODUCT. */
export const resolveProduct: BatchStep = {
  kind: 'batch',
  name: 'resolve-product',
  async run(ctx, pending) {
    const slugs = [...new Set(pending.map((c) => c.event!.product_slug))];
    ctx.products = await productsBySlugs(ctx.db, ctx.tenantId, slugs);
    for (const c of pending) {
      const product = ctx.products.get(c.event!.product_slug);
      if (!product || product.status !== 'active') {
        c.rejection = {
          reason: 'UNRECOGNIZED_PRODUCT',
          message: product
            ? `product "${c.event!.product_slug}" is being deleted`
            : `product "${c.event!.product_slug}" is not a registered product of this tenant`,
        };
      } else {
        c.event!.product_id = product.id;
      }
    }
  },
};
