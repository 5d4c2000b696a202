import type { QueueStorage, QueuedRecord, TallyIssue } from './types.js';
import { utf8Length } from './validate.js';

// The durable queue: an in-memory mirror of the storage, so that delivery never waits on a disk
// or on IndexedDB to pick a batch. Every change is written through to the storage at once; a
// synchronous storage has it on disk before track() returns.

interface Entry {
  record: QueuedRecord;
  bytes: number;
}

export interface QueueBounds {
  maxRecords: number;
  maxBytes: number;
}

export class DurableQueue {
  // A Map keeps first-insertion order (oldest first), deletes in O(1), and an upsert keeps its place.
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;
  private markers = 0;
  private markerBytes = 0;
  private events = 0;
  private storageFailed = false;
  private readonly writing = new Set<Promise<void>>();
  /** Ids in a request right now: never dropped for space, since they may already be stored. */
  readonly inflight = new Set<string>();
  dropped = 0;
  private unreported = 0;
  private lastDropReport = -Infinity;
  /** Resolves once the records that were on storage at start are merged in front of the new ones. */
  ready: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: QueueStorage,
    private readonly bounds: QueueBounds,
    private readonly report: (issue: TallyIssue) => void,
  ) {}

  /**
   * Loads what a previous process left. `recover` sees those records before any new one is sent
   * and may add records in front of the new ones (an sdk_recovery end comes before the next
   * session's start). A synchronous storage is loaded before open() returns.
   */
  open(recover: (loaded: QueuedRecord[]) => { put: QueuedRecord[]; remove: string[] }): void {
    let loaded: QueuedRecord[] | Promise<QueuedRecord[]>;
    try {
      loaded = this.storage.load();
    } catch (err) {
      this.storageError(err);
      loaded = [];
    }
    if (Array.isArray(loaded)) this.merge(loaded, recover);
    else {
      this.ready = loaded.then(
        (records) => this.merge(records, recover),
        (err: unknown) => {
          this.storageError(err);
          this.merge([], recover);
        },
      );
    }
  }

  /** Older records (from storage) go in front of any put while the storage was loading. */
  private merge(loaded: QueuedRecord[], recover: (loaded: QueuedRecord[]) => { put: QueuedRecord[]; remove: string[] }): void {
    const newer = [...this.entries.values()];
    this.entries.clear();
    this.totalBytes = this.markers = this.markerBytes = this.events = 0;
    const kept = loaded.filter((r) => r && typeof r.id === 'string' && typeof r.kind === 'string' && r.body && typeof r.body === 'object');
    for (const record of kept) this.add(record);
    const fix = recover(kept);
    for (const record of fix.put) this.put(record);
    // A record put since start (a resumed session's marker) is newer than its stored copy: keep it.
    const renewed = new Set(newer.map((e) => e.record.id));
    this.remove(fix.remove.filter((id) => !renewed.has(id)));
    for (const e of newer) this.add(e.record);
    this.enforceBounds();
  }

  private add(record: QueuedRecord): void {
    const bytes = utf8Length(JSON.stringify(record.body));
    const prev = this.entries.get(record.id);
    if (prev) this.count(prev, -1);
    const entry = { record, bytes };
    this.entries.set(record.id, entry);
    this.count(entry, 1);
  }

  private count(e: Entry, sign: 1 | -1): void {
    this.totalBytes += sign * e.bytes;
    if (e.record.kind === 'session_open') {
      this.markers += sign;
      this.markerBytes += sign * e.bytes;
    } else if (e.record.kind === 'event') this.events += sign;
  }

  put(record: QueuedRecord): void {
    this.add(record);
    this.write(() => this.storage.put(record));
    this.enforceBounds();
  }

  remove(ids: readonly string[]): void {
    const gone: string[] = [];
    for (const id of ids) {
      const e = this.entries.get(id);
      if (!e) continue;
      this.entries.delete(id);
      this.count(e, -1);
      gone.push(id);
    }
    if (gone.length > 0) this.write(() => this.storage.remove(gone));
  }

  bytesOf(id: string): number {
    return this.entries.get(id)?.bytes ?? 0;
  }

  /** Oldest first; safe to remove while iterating. */
  *records(): Generator<QueuedRecord> {
    for (const e of this.entries.values()) yield e.record;
  }

  /** Records that are to be sent (session markers are state, not messages). */
  get size(): number {
    return this.entries.size - this.markers;
  }

  /** The bytes of the records that are to be sent (as size, without session markers). */
  get bytes(): number {
    return this.totalBytes - this.markerBytes;
  }

  countEvents(): number {
    return this.events;
  }

  /** Oldest first, never an open session's marker, never a record in flight. */
  private enforceBounds(): void {
    let records = this.size;
    if (records <= this.bounds.maxRecords && this.bytes <= this.bounds.maxBytes) return;
    const victims: string[] = [];
    let bytes = this.bytes;
    for (const [id, e] of this.entries) {
      if (records <= this.bounds.maxRecords && bytes <= this.bounds.maxBytes) break;
      if (e.record.kind === 'session_open' || this.inflight.has(id)) continue;
      victims.push(id);
      records--;
      bytes -= e.bytes;
    }
    if (victims.length === 0) return;
    this.remove(victims);
    this.dropped += victims.length;
    this.unreported += victims.length;
    // A long outage drops on every track(): say so at most every 10 s, with the count since.
    const now = Date.now();
    if (now - this.lastDropReport < 10_000) return;
    this.lastDropReport = now;
    this.report({
      code: 'dropped',
      count: this.unreported,
      message: `the queue is full: dropped the ${this.unreported} oldest record(s) (${this.dropped} in all)`,
    });
    this.unreported = 0;
  }

  /** Resolves when every write made so far has reached the storage (or failed). */
  async settled(): Promise<void> {
    await Promise.all([...this.writing]);
  }

  private write(op: () => void | Promise<void>): void {
    try {
      const pending = op();
      if (!pending) return;
      const tracked = pending.catch((err: unknown) => this.storageError(err));
      this.writing.add(tracked);
      void tracked.finally(() => this.writing.delete(tracked));
    } catch (err) {
      this.storageError(err);
    }
  }

  private storageError(err: unknown): void {
    // Once per client: a full disk would otherwise warn on every track().
    if (this.storageFailed) return;
    this.storageFailed = true;
    this.report({ code: 'storage_error', message: `the queue storage failed; records are kept in memory: ${String(err)}` });
  }
}
