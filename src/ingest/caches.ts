import { versionKey } from '../storage/versions.js';
import type { VersionRef } from './types.js';

// What the event pipeline remembers between batches, owned by the object buildApp creates (one
// per app), never by a module: two apps in one process (tests) do not share it.

/**
 * The latest sign of life this process has written (and seen committed) per session, in ms: an
 * event no newer than it cannot move the stored value, so it is not sent again. Exact, since the
 * stored value only moves forward (and whatever another process wrote is newer still).
 */
export class SessionSigns {
  private readonly written = new Map<string, number>();
  constructor(private readonly capacity = 100_000) {}

  private static key = (tenantId: string, sessionId: string): string => `${tenantId}\u0001${sessionId}`;

  /** Of the batch's latest sign per session, those that could still move the stored value. */
  due(tenantId: string, latest: ReadonlyMap<string, { ts: string; ms: number }>): Map<string, string> {
    const due = new Map<string, string>();
    for (const [sid, { ts, ms }] of latest) {
      const written = this.written.get(SessionSigns.key(tenantId, sid));
      if (written === undefined || ms > written) due.set(sid, ts);
    }
    return due;
  }

  /** After the commit: these signs are stored. */
  remember(tenantId: string, written: ReadonlyMap<string, string>): void {
    if (this.written.size + written.size > this.capacity) this.written.clear();
    for (const [sid, ts] of written) {
      const key = SessionSigns.key(tenantId, sid);
      this.written.set(key, Math.max(this.written.get(key) ?? -Infinity, Date.parse(ts)));
    }
  }
}

/**
 * last_seen of a version moves at most once a minute per process: writing it on every batch would
 * make concurrent batches of one version queue on its row lock.
 */
export class VersionTouches {
  private readonly touched = new Map<string, number>();
  constructor(
    private readonly intervalMs = 60_000,
    private readonly capacity = 50_000,
  ) {}

  /** The versions whose last_seen is due for a write at `now`; marks them written. */
  due(versions: readonly VersionRef[], now: number): VersionRef[] {
    const due = versions.filter((v) => {
      const key = versionKey(v.productId, v.version);
      if (now - (this.touched.get(key) ?? 0) < this.intervalMs) return false;
      this.touched.set(key, now);
      return true;
    });
    if (this.touched.size > this.capacity) this.touched.clear();
    return due;
  }
}
