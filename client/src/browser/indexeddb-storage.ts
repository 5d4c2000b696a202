import type { QueueStorage, QueuedRecord } from '../core/types.js';
import { MemoryStorage } from '../core/memory-storage.js';
import { LocalStorageStorage, usableLocalStorage } from './local-storage.js';

// The browser queue in IndexedDB, keyed by record id (UUIDv7, so key order is the order the
// records were made). Larger and sturdier than localStorage; when IndexedDB cannot be opened
// (some private modes, a blocked upgrade) it falls back to localStorage, then to memory. The
// small synchronous state (the anonymous id, the session pointer) lives in localStorage.
//
// IndexedDB commits after track() has returned, and a page that goes away aborts what has not
// committed yet. So puts still in flight are remembered, and on pagehide written synchronously
// to localStorage (the spill); the next load moves the spill into the database.

type Backend = Pick<QueueStorage, 'load' | 'put' | 'remove'>;
const STORE = 'records';

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function openDatabase(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    if (typeof indexedDB === 'undefined') return reject(new Error('IndexedDB is not available'));
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id' });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error('IndexedDB upgrade blocked by another tab'));
  });
}

function idbBackend(db: IDBDatabase): Backend {
  // One transaction per call; IndexedDB runs read-write transactions on a store in the order they were made.
  const tx = (mode: IDBTransactionMode, fn: (store: IDBObjectStore) => void) =>
    new Promise<void>((resolve, reject) => {
      const t = db.transaction(STORE, mode);
      fn(t.objectStore(STORE));
      t.oncomplete = () => resolve();
      t.onerror = t.onabort = () => reject(t.error);
    });
  return {
    load: () => request(db.transaction(STORE, 'readonly').objectStore(STORE).getAll()) as Promise<QueuedRecord[]>,
    put: (record) => tx('readwrite', (s) => s.put(record)),
    remove: (ids) => tx('readwrite', (s) => ids.forEach((id) => s.delete(id))),
  };
}

const byId = (a: QueuedRecord, b: QueuedRecord) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export class IndexedDbStorage implements QueueStorage {
  private readonly backend: Promise<Backend>;
  private readonly state: QueueStorage;
  private readonly spill: LocalStorageStorage | undefined;
  private readonly inFlight = new Map<string, QueuedRecord>();

  constructor(namespace = 'tally') {
    const ls = usableLocalStorage();
    this.state = ls ? new LocalStorageStorage(namespace, ls) : new MemoryStorage();
    this.spill = ls ? new LocalStorageStorage(`${namespace}:spill`, ls) : undefined;
    this.backend = openDatabase(namespace).then(idbBackend, () => (ls ? new LocalStorageStorage(namespace, ls) : new MemoryStorage()));
  }

  // Every call waits for the same promise, so the calls reach the database in the order they were made.
  async load(): Promise<QueuedRecord[]> {
    const backend = await this.backend;
    const stored = await backend.load();
    const spilled = this.spill?.load() ?? [];
    if (spilled.length === 0) return stored;
    for (const r of spilled) await backend.put(r);
    this.spill!.remove(spilled.map((r) => r.id));
    const all = new Map(stored.map((r) => [r.id, r]));
    for (const r of spilled) all.set(r.id, r);
    return [...all.values()].sort(byId);
  }

  async put(record: QueuedRecord): Promise<void> {
    this.inFlight.set(record.id, record);
    try {
      await (await this.backend).put(record);
    } finally {
      if (this.inFlight.get(record.id) === record) this.inFlight.delete(record.id);
    }
  }

  async remove(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.inFlight.delete(id);
    await (await this.backend).remove(ids);
  }

  persistNow(): void {
    for (const record of this.inFlight.values()) {
      try {
        this.spill?.put(record);
      } catch {
        return; // quota: nothing more can be saved now
      }
    }
  }

  getState(key: string): string | undefined {
    return this.state.getState(key);
  }

  setState(key: string, value: string | undefined): void {
    this.state.setState(key, value);
  }
}
