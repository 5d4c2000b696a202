import type { QueueStorage, QueuedRecord } from './types.js';

/** Keeps the queue in memory only: nothing survives the process. For tests and short scripts. */
export class MemoryStorage implements QueueStorage {
  private readonly records = new Map<string, QueuedRecord>();
  private readonly state = new Map<string, string>();

  load(): QueuedRecord[] {
    return [...this.records.values()];
  }

  put(record: QueuedRecord): void {
    this.records.set(record.id, record);
  }

  remove(ids: readonly string[]): void {
    for (const id of ids) this.records.delete(id);
  }

  getState(key: string): string | undefined {
    return this.state.get(key);
  }

  setState(key: string, value: string | undefined): void {
    if (value === undefined) this.state.delete(key);
    else this.state.set(key, value);
  }
}
