import type { DurableQueue } from './queue.js';
import type { QueueStorage, QueuedRecord, SessionEndBody, SessionMarker, SessionStartBody } from './types.js';
import { uuidv7 } from './uuid.js';
import { unref } from './environment.js';

// Sessions that stay honest across crashes. An open session is persisted as a marker record in
// the durable queue (never sent): its start context and last activity. A graceful end removes
// the marker and queues the end. A process that dies leaves the marker behind, and the next one
// to load it sends an sdk_recovery end at the last activity, with the start context, so the
// server can create the session even if its start never arrived.

const iso = (ms: number) => new Date(ms).toISOString();

export interface SessionOptions {
  product: string;
  productVersion: string;
  /** Inactivity that ends a session (0 = never). Also how recent a stored session must be to be resumed. */
  timeoutMs: number;
  /** Last activity is written at most this often: a crash loses at most this much of it. */
  persistEveryMs: number;
}

export interface SessionContext {
  actorId(): string;
  accountId(): string | undefined;
  licenseId(): string | undefined;
}

const POINTER = 'session';

export class Sessions {
  current: SessionMarker | undefined;
  private markerId: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly queue: DurableQueue,
    private readonly storage: QueueStorage,
    private readonly opts: SessionOptions,
    private readonly ctx: SessionContext,
  ) {}

  /**
   * Continues the session of a previous page load when it was active within the timeout (browser
   * navigation is not the end of a visit). Uses the small synchronous state, not the queue, so
   * that the events tracked right after init already carry the session id.
   */
  resume(now: number): boolean {
    if (this.opts.timeoutMs <= 0) return false;
    let p: (SessionMarker & { marker_id: string }) | undefined;
    try {
      const raw = this.storage.getState(POINTER);
      p = raw ? JSON.parse(raw) : undefined;
    } catch {
      p = undefined;
    }
    if (!p || p.product !== this.opts.product || typeof p.session_id !== 'string' || !(now - Date.parse(p.last_activity) < this.opts.timeoutMs)) return false;
    const { marker_id: markerId, ...marker } = p;
    this.current = marker;
    this.markerId = markerId;
    this.touch(now);
    return true;
  }

  start(now: number, properties?: Record<string, string | number | boolean>): string {
    if (this.current) this.end(now);
    const account = this.ctx.accountId();
    const license = this.ctx.licenseId();
    const start: SessionStartBody = {
      session_id: uuidv7(now),
      actor_id: this.ctx.actorId(),
      product: this.opts.product,
      product_version: this.opts.productVersion,
      started_at: iso(now),
      ...(properties ? { properties } : {}),
      // SPEC.md: captured at start; later setAccount / setLicense calls do not change this session.
      ...(account !== undefined ? { account_id: account } : {}),
      ...(license !== undefined ? { license_id: license } : {}),
    };
    this.queue.put({ id: uuidv7(now), kind: 'session_start', body: start });
    const { properties: _p, ...context } = start;
    this.current = { ...context, last_activity: start.started_at };
    this.markerId = uuidv7(now);
    this.persist();
    return start.session_id;
  }

  end(now: number): void {
    const s = this.current;
    if (!s) return;
    const endedAt = Math.max(now, Date.parse(s.started_at));
    this.queue.put({ id: uuidv7(now), kind: 'session_end', body: { session_id: s.session_id, ended_at: iso(endedAt), end_reason: 'normal' } });
    if (this.markerId) this.queue.remove([this.markerId]);
    this.current = undefined;
    this.markerId = undefined;
    this.clearPointer();
  }

  /**
   * Opt-out: the session stops here. If its start was never sent, nothing of it ever reaches the
   * server; otherwise its end is queued (the one record kept), so that it does not stay open.
   */
  abandon(now: number): void {
    const s = this.current;
    if (!s) return;
    let unsent = false;
    for (const r of this.queue.records()) if (r.kind === 'session_start' && r.body.session_id === s.session_id && !this.queue.inflight.has(r.id)) unsent = true;
    if (unsent) {
      if (this.markerId) this.queue.remove([this.markerId]);
      this.current = undefined;
      this.markerId = undefined;
      this.clearPointer();
      return;
    }
    this.end(now);
  }

  /** Activity in the session: a new session after too long a silence, else a later last activity. */
  touch(now: number): string | undefined {
    const s = this.current;
    if (!s) return undefined;
    const last = Date.parse(s.last_activity);
    if (this.opts.timeoutMs > 0 && now - last > this.opts.timeoutMs) {
      this.end(last); // it ended when the user went quiet, not now
      return this.start(now);
    }
    if (now > last) s.last_activity = iso(now);
    this.timer ??= unref(
      setTimeout(() => {
        this.timer = undefined;
        this.persist();
      }, this.opts.persistEveryMs),
    );
    return s.session_id;
  }

  /** Writes the marker (and, when sessions resume, the pointer) now. */
  persist(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const s = this.current;
    if (!s || !this.markerId) return;
    this.queue.put({ id: this.markerId, kind: 'session_open', body: { ...s } });
    if (this.opts.timeoutMs > 0) {
      try {
        this.storage.setState(POINTER, JSON.stringify({ ...s, marker_id: this.markerId }));
      } catch {
        // the marker in the queue still lets the session be recovered
      }
    }
  }

  /**
   * Markers of sessions no process is running any more become sdk_recovery ends. A marker that
   * was active within the timeout may belong to another tab of the same site: left alone.
   */
  recover(loaded: QueuedRecord[], now: number): { put: QueuedRecord[]; remove: string[] } {
    const orphans = new Map<string, { marker: SessionMarker; ids: string[]; last: number }>();
    const remove: string[] = [];
    for (const r of loaded) {
      if (r.kind !== 'session_open') continue;
      if (r.body.session_id === this.current?.session_id) {
        if (r.id !== this.markerId) remove.push(r.id);
        continue;
      }
      const o = orphans.get(r.body.session_id);
      const last = Date.parse(r.body.last_activity) || Date.parse(r.body.started_at);
      if (o) {
        o.ids.push(r.id);
        o.last = Math.max(o.last, last);
      } else orphans.set(r.body.session_id, { marker: r.body, ids: [r.id], last });
    }
    if (orphans.size === 0) return { put: [], remove };
    // Events queued but never sent are signs of life the throttled marker may have missed.
    for (const r of loaded) {
      if (r.kind !== 'event' || !r.body.session_id) continue;
      const o = orphans.get(r.body.session_id);
      if (o) o.last = Math.max(o.last, Date.parse(r.body.timestamp) || 0);
    }
    const put: QueuedRecord[] = [];
    for (const [sessionId, o] of orphans) {
      if (this.opts.timeoutMs > 0 && now - o.last < this.opts.timeoutMs) continue;
      const m = o.marker;
      const end: SessionEndBody = {
        session_id: sessionId,
        ended_at: iso(Math.max(o.last, Date.parse(m.started_at))),
        end_reason: 'sdk_recovery',
        actor_id: m.actor_id,
        product: m.product,
        product_version: m.product_version,
        started_at: m.started_at,
        ...(m.account_id !== undefined ? { account_id: m.account_id } : {}),
        ...(m.license_id !== undefined ? { license_id: m.license_id } : {}),
      };
      put.push({ id: uuidv7(now), kind: 'session_end', body: end });
      remove.push(...o.ids);
    }
    return { put, remove };
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private clearPointer(): void {
    if (this.opts.timeoutMs <= 0) return;
    try {
      this.storage.setState(POINTER, undefined);
    } catch {
      // nothing to do: a stale pointer is ignored once the timeout has passed
    }
  }
}
