import type { QueueStorage, QueuedRecord } from '../core/types.js';

// The queue in localStorage: one key per record (a put or a remove touches one small key, not a
// rewritten array), sorted back into order by their UUIDv7 ids. Synchronous, so a record is
// stored before track() returns; limited to the origin's quota (about 5 MB), past which writes
// fail and the client keeps the records in memory.

export class LocalStorageStorage implements QueueStorage {
  private readonly records: string;
  private readonly state: string;

  constructor(
    namespace = 'tally',
    private readonly ls: Storage = globalThis.localStorage,
  ) {
    this.records = `${namespace}:r:`;
    this.state = `${namespace}:s:`;
  }

  load(): QueuedRecord[] {
    const out: QueuedRecord[] = [];
    for (let i = 0; i < this.ls.length; i++) {
      const key = this.ls.key(i);
      if (!key?.startsWith(this.records)) continue;
      try {
        out.push(JSON.parse(this.ls.getItem(key) ?? 'null') as QueuedRecord);
      } catch {
        // a damaged entry: skipped
      }
    }
    return out.filter((r) => r && typeof r.id === 'string').sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  put(record: QueuedRecord): void {
    this.ls.setItem(this.records + record.id, JSON.stringify(record));
  }

  remove(ids: readonly string[]): void {
    for (const id of ids) this.ls.removeItem(this.records + id);
  }

  getState(key: string): string | undefined {
    return this.ls.getItem(this.state + key) ?? undefined;
  }

  setState(key: string, value: string | undefined): void {
    if (value === undefined) this.ls.removeItem(this.state + key);
    else this.ls.setItem(this.state + key, value);
  }
}

/** localStorage when the page may use it (it throws in some private modes and sandboxed frames). */
export function usableLocalStorage(): Storage | undefined {
  try {
    const ls = globalThis.localStorage;
    const probe = '__tally_probe__';
    ls.setItem(probe, '1');
    ls.removeItem(probe);
    return ls;
  } catch {
    return undefined;
  }
}
