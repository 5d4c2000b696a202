import type { Catalog } from '../catalog.js';

// The embedded store's catalog cache. Exact because one process owns the store and every change to
// the catalog's tables reaches it before it is acknowledged: migration 009's triggers notify
// channel tally_catalog, the worker flags the answer to the statement or COMMIT that made the
// change (worker.mjs), and rpc.ts calls `changed()` before that answer resolves.

const ENTRIES = 10_000;

export interface CatalogCache extends Catalog {
  /** A change to the catalog committed: drop everything, before its answer resolves. */
  changed(): void;
}

export function createCatalogCache(): CatalogCache {
  const entries = new Map<string, unknown>();
  let epoch = 0;
  return {
    changed() {
      epoch++;
      entries.clear();
    },
    async read<T>(key: string, load: () => Promise<T>, cacheIf?: (value: T) => boolean): Promise<T> {
      if (entries.has(key)) return entries.get(key) as T;
      const since = epoch;
      const value = await load();
      // A change committed while this read was on its way may not be in it: keep it only if none was.
      if (since === epoch && (cacheIf?.(value) ?? true)) {
        if (entries.size >= ENTRIES) entries.clear();
        entries.set(key, value);
      }
      return value;
    },
  };
}
