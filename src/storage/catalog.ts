import type { Db } from './store.js';

/**
 * Reads of the catalog (tenants, API keys, products, versions): an API key's look-up and a batch's
 * products and version statuses, the two reads every ingest request makes. A store that sees every
 * change to those tables before it is acknowledged may serve them from memory; one that does not
 * reads every time. The value may be shared between requests: callers must not modify it.
 */
export interface Catalog {
  /** `load` under `key`; `cacheIf` says whether a value may be kept (an unknown key is not). */
  read<T>(key: string, load: () => Promise<T>, cacheIf?: (value: T) => boolean): Promise<T>;
}

/** A PostgreSQL server has other writers: nothing is kept. */
export const readThrough: Catalog = { read: (_key, load) => load() };

// The catalog that openDb built with each store. Held beside the store rather than in the Db
// interface, so that Db stays the same on both stores; a Db that openDb did not open (a wrapper,
// a copy) reads through, which is always exact.
const catalogs = new WeakMap<Db, Catalog>();

export function attachCatalog(db: Db, catalog: Catalog): Db {
  catalogs.set(db, catalog);
  return db;
}

/** The catalog reads of this store. */
export function catalogOf(db: Db): Catalog {
  return catalogs.get(db) ?? readThrough;
}
