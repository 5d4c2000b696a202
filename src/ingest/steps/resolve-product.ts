import type { Db } from '../../storage/db.js';
import { catalogForBatch } from '../../storage/products.js';
import { accept, reject, type ParsedEvent, type ResolvedEvent, type Verdict } from '../types.js';

/**
 * Looks up every product slug of the batch at once, with the versions the batch names (for
 * check-version, in the same round trip); unknown or deleting products are UNRECOGNIZED_PRODUCT.
 * The catalog is shared with other batches where the store caches it: never modified.
 */
export async function resolveProducts(
  db: Db,
  tenantId: string,
  events: readonly ParsedEvent[],
): Promise<{ verdicts: Verdict<ResolvedEvent>[]; versionStatuses: ReadonlyMap<string, string> }> {
  if (events.length === 0) return { verdicts: [], versionStatuses: new Map() };
  const slugs = [...new Set(events.map((e) => e.productSlug))];
  const versions = [...new Set(events.map((e) => e.product_version))];
  const catalog = await catalogForBatch(db, tenantId, slugs, versions);
  const verdicts = events.map((e): Verdict<ResolvedEvent> => {
    const product = catalog.products.get(e.productSlug);
    if (!product) return reject('UNRECOGNIZED_PRODUCT', `product "${e.productSlug}" is not a registered product of this tenant`);
    if (product.status !== 'active') return reject('UNRECOGNIZED_PRODUCT', `product "${e.productSlug}" is being deleted`);
    return accept({ ...e, product });
  });
  return { verdicts, versionStatuses: catalog.versions };
}
