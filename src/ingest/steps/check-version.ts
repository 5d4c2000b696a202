import { versionKey } from '../../storage/versions.js';
import { accept, reject, type AdmittedEvent, type ResolvedEvent, type Verdict, type VersionRef } from '../types.js';

export interface VersionCheck {
  verdicts: Verdict<AdmittedEvent>[];
  /** Versions seen for the first time on products without strict mode: registered in the batch's write. */
  register: VersionRef[];
  /** Registered versions the batch admits events on: their last_seen may move forward after the commit. */
  seen: VersionRef[];
}

/**
 * Strict products accept only registered, active versions (UNREGISTERED_VERSION); other products
 * auto-register a version on first sight (in the write statement, race-free). The product's
 * strict flag was read with this batch's catalog, so a toggle applies from the next batch on and
 * never to events already judged.
 */
export function checkVersions(events: readonly ResolvedEvent[], statuses: ReadonlyMap<string, string>): VersionCheck {
  const pairs = new Map<string, VersionRef & { strict: boolean; status: string | undefined }>();
  const verdicts = events.map((e): Verdict<AdmittedEvent> => {
    const key = versionKey(e.product.id, e.product_version);
    let pair = pairs.get(key);
    if (!pair) {
      pair = { productId: e.product.id, version: e.product_version, strict: e.product.strict, status: statuses.get(key) };
      pairs.set(key, pair);
    }
    if (pair.strict && pair.status !== 'active') {
      const state = pair.status === undefined ? 'not registered' : pair.status;
      return reject('UNREGISTERED_VERSION', `version "${e.product_version}" is ${state} and strict version mode is on for "${e.productSlug}"`);
    }
    const { productSlug: _slug, product, ...record } = e;
    return accept({ ...record, product_id: product.id });
  });
  const list = [...pairs.values()];
  return {
    verdicts,
    register: list.filter((p) => !p.strict && p.status === undefined).map(({ productId, version }) => ({ productId, version })),
    // Not a version strict mode refused: its events were not kept, so they did not see it.
    seen: list.filter((p) => p.status !== undefined && !(p.strict && p.status !== 'active')).map(({ productId, version }) => ({ productId, version })),
  };
}
