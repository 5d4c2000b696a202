import type { DurableQueue } from './queue.js';
import { equalJitter, fullJitter, parseRetryAfter } from './retry.js';
import { postJson, type HttpAnswer } from './transport.js';
import { unref } from './environment.js';
import type { QueueStorage, QueuedRecord, RecordKind, TallyIssue } from './types.js';

// The delivery loop: one request at a time, oldest record first, and the rules of SPEC.md
// "Client behavior on errors". A record leaves the queue only when the server has answered for
// it (accepted, or rejected for good); everything else keeps it, so that a retry resends the
// same ids and the server's deduplication makes the retry safe.

export interface DeliveryConfig {
  endpoint: string;
  apiKey: string;
  fetch: typeof fetch;
  maxBatchEvents: number;
  maxBatchBytes: number;
  requestTimeoutMs: number;
  retry: { baseDelayMs: number; maxDelayMs: number; maxRetryAfterMs: number };
  billingProbe: { baseDelayMs: number; maxDelayMs: number };
  /** base64 X-Environment-Data, sent with the first POST /v1/events of the process. */
  environmentHeader: () => string | undefined;
  /** Where a billing block is remembered, so that the next process probes instead of resending everything. */
  state: Pick<QueueStorage, 'getState' | 'setState'>;
  /** With `debug: true`: each request and its answer. */
  debug?: ((message: string, detail?: unknown) => void) | undefined;
}

const BILLING_BLOCK = 'billing_block';

const PATHS: Record<Exclude<RecordKind, 'session_open'>, string> = {
  event: '/v1/events',
  session_start: '/v1/events/sessions',
  session_end: '/v1/events/sessions/end',
  exception: '/v1/events/exceptions',
  identify: '/v1/actors/identify',
};

type Unit =
  { kind: 'event'; records: QueuedRecord[]; bytes: number } | { kind: Exclude<RecordKind, 'session_open' | 'event'>; records: [QueuedRecord]; bytes: number };

/** Room for `[`, `]` and commas. */
const batchBytes = (eventBytes: number, n: number) => eventBytes + n + 1;
/** fetch keepalive bodies are limited to 64 KiB in flight, per page. */
const KEEPALIVE_BYTES = 60_000;

export class Delivery {
  private running: Promise<void> | undefined;
  private wake: ReturnType<typeof setTimeout> | undefined;
  private retryAt = 0;
  private eventsRetryAt = 0;
  private attempt = 0;
  private parkAttempt = 0;
  private byteLimit: number;
  private eventLimit: number;
  private environmentSent = false;
  private closed = false;
  parked = false;
  paused: 'unauthorized' | 'forbidden' | undefined;
  accepted = 0;
  duplicates = 0;
  rejected = 0;

  constructor(
    private readonly queue: DurableQueue,
    private readonly config: DeliveryConfig,
    private readonly report: (issue: TallyIssue) => void,
  ) {
    this.byteLimit = config.maxBatchBytes;
    this.eventLimit = config.maxBatchEvents;
    this.restorePark();
  }

  /** Sends what can be sent now; resolves when the queue is empty or sending must wait. */
  pump(opts: { keepalive?: boolean } = {}): Promise<void> {
    this.running ??= this.loop(opts.keepalive === true).finally(() => (this.running = undefined));
    return this.running;
  }

  /** When the next attempt may happen, while backing off (epoch ms). */
  get nextAttemptAt(): number | undefined {
    const now = Date.now();
    if (this.retryAt > now) return this.retryAt;
    if (this.eventsRetryAt > now && this.queue.countEvents() > 0) return this.eventsRetryAt;
    return undefined;
  }

  close(): void {
    this.closed = true;
    if (this.wake) clearTimeout(this.wake);
  }

  private async loop(keepalive: boolean): Promise<void> {
    await this.queue.ready;
    for (;;) {
      if (this.closed || this.paused) return;
      const now = Date.now();
      if (now < this.retryAt) return this.wakeAt(this.retryAt);
      const unit = this.nextUnit(now, keepalive);
      if (!unit) {
        if (this.eventsRetryAt > now && this.queue.countEvents() > 0) this.wakeAt(this.eventsRetryAt);
        return;
      }
      await this.send(unit, keepalive);
      if (keepalive) return; // one request as the page goes away; the rest waits on storage
    }
  }

  private wakeAt(at: number): void {
    if (this.wake) clearTimeout(this.wake);
    this.wake = unref(setTimeout(() => void this.pump(), Math.max(0, at - Date.now())));
  }

  /** The oldest record decides: an event starts a batch, anything else goes alone. */
  private nextUnit(now: number, keepalive: boolean): Unit | undefined {
    const eventsOpen = now >= this.eventsRetryAt;
    for (const r of this.queue.records()) {
      if (r.kind === 'session_open' || this.queue.inflight.has(r.id)) continue;
      if (r.kind === 'event') {
        if (!eventsOpen) continue; // 429 holds events only; sessions and exceptions are not rate-limited
        // While billing blocks ingestion, probe with a single event: the answer is all we need.
        return this.eventBatch(this.parked ? 1 : this.eventLimit, keepalive ? Math.min(KEEPALIVE_BYTES, this.byteLimit) : this.byteLimit);
      }
      return { kind: r.kind, records: [r], bytes: this.queue.bytesOf(r.id) };
    }
    return undefined;
  }

  private eventBatch(maxEvents: number, maxBytes: number): Unit {
    const records: QueuedRecord[] = [];
    let bytes = 0;
    for (const r of this.queue.records()) {
      if (r.kind !== 'event' || this.queue.inflight.has(r.id)) continue;
      const b = this.queue.bytesOf(r.id);
      if (records.length > 0 && batchBytes(bytes + b, records.length + 1) > maxBytes) break;
      records.push(r);
      bytes += b;
      if (records.length >= maxEvents) break;
    }
    return { kind: 'event', records, bytes: batchBytes(bytes, records.length) };
  }

  private async send(unit: Unit, keepalive: boolean): Promise<void> {
    const headers: Record<string, string> = {};
    let withEnvironment = false;
    if (unit.kind === 'event' && !this.environmentSent) {
      const env = this.config.environmentHeader();
      if (env) {
        headers['x-environment-data'] = env;
        withEnvironment = true;
      }
    }
    const body = unit.kind === 'event' ? `[${unit.records.map((r) => JSON.stringify(r.body)).join(',')}]` : JSON.stringify(unit.records[0].body);
    const ids = unit.records.map((r) => r.id);
    for (const id of ids) this.queue.inflight.add(id);
    const outcome = await postJson({
      fetch: this.config.fetch,
      url: this.config.endpoint + PATHS[unit.kind],
      apiKey: this.config.apiKey,
      body,
      headers,
      timeoutMs: this.config.requestTimeoutMs,
      keepalive,
    });
    for (const id of ids) this.queue.inflight.delete(id);
    this.config.debug?.(
      `POST ${PATHS[unit.kind]}${unit.kind === 'event' ? ` (${ids.length} event(s)${withEnvironment ? ', with X-Environment-Data' : ''})` : ''}${keepalive ? ' keepalive' : ''}: ${outcome.ok ? outcome.answer.status : outcome.error}`,
      outcome.ok && outcome.answer.status >= 300 ? outcome.answer.body : undefined,
    );
    if (!outcome.ok) return this.transient(null);
    // CONTRACT.md: the environment counts as sent whatever the answer (the server keeps it even on 429 / 402).
    if (withEnvironment) this.environmentSent = true;
    this.handle(unit, outcome.answer);
  }

  private handle(unit: Unit, answer: HttpAnswer): void {
    const { status } = answer;
    const code = typeof (answer.body as { code?: unknown })?.code === 'string' ? (answer.body as { code: string }).code : undefined;
    if (status >= 200 && status < 300) return this.delivered(unit, answer.body);
    if (status === 401 || status === 403) {
      this.paused = status === 401 ? 'unauthorized' : 'forbidden';
      this.report({
        code: this.paused,
        status,
        message: `the server refused the API key (${status}); sending is paused and ${this.queue.size} record(s) stay queued`,
      });
      return;
    }
    if (status === 402) return this.park(answer);
    if (status === 429) {
      const wait = parseRetryAfter(answer.retryAfter, this.config.retry.maxRetryAfterMs) ?? this.backoff(++this.attempt);
      if (unit.kind === 'event') this.eventsRetryAt = Date.now() + wait;
      else this.retryAt = Date.now() + wait;
      return;
    }
    if (status === 413 && unit.records.length > 1) {
      // Halve and resend at once: the server (or a proxy) takes less than we thought, and keeps taking less.
      this.byteLimit = Math.ceil(unit.bytes / 2) + 1;
      this.eventLimit = Math.max(1, Math.ceil(unit.records.length / 2));
      return;
    }
    if (status === 408 || status === 425 || status >= 500) return this.transient(answer.retryAfter);
    // 400, 404, 409, 413 on a single record, 422 (UNREGISTERED_VERSION among them): terminal, never retried.
    this.drop(unit, status, code ?? String(status));
  }

  private delivered(unit: Unit, body: unknown): void {
    this.attempt = 0;
    if (this.parked) {
      this.parked = false;
      this.parkAttempt = 0;
      this.saveState(BILLING_BLOCK, undefined);
    }
    if (unit.kind === 'event') {
      const results = (body as { results?: unknown })?.results;
      const rejected = new Map<string, number>();
      unit.records.forEach((_r, i) => {
        const result = Array.isArray(results) ? (results[i] as { status?: string; reason?: string; duplicate?: boolean } | undefined) : undefined;
        if (result?.status === 'rejected') rejected.set(result.reason ?? 'rejected', (rejected.get(result.reason ?? 'rejected') ?? 0) + 1);
        else {
          this.accepted++;
          if (result?.duplicate) this.duplicates++;
        }
      });
      // 207: the rejected are dropped (they would be rejected again), the accepted are never resent.
      for (const [reason, count] of rejected) {
        this.rejected += count;
        this.report({ code: 'rejected', status: 207, reason, count, message: `the server rejected ${count} event(s): ${reason}` });
      }
    }
    this.queue.remove(unit.records.map((r) => r.id));
  }

  private drop(unit: Unit, status: number, reason: string): void {
    this.rejected += unit.records.length;
    this.queue.remove(unit.records.map((r) => r.id));
    const what = unit.kind === 'event' ? `${unit.records.length} event(s)` : `a ${unit.kind.replace('_', ' ')}`;
    this.report({
      code: 'rejected',
      status,
      reason,
      count: unit.records.length,
      message: `the server rejected ${what} for good (${status} ${reason}); not retried`,
    });
  }

  /** 402: everything stays on storage; one small probe at a time, with backoff, until it is accepted. */
  private park(answer: HttpAnswer): void {
    if (!this.parked) {
      const reason = (answer.body as { reason?: unknown })?.reason;
      this.report({
        code: 'billing_blocked',
        status: 402,
        ...(typeof reason === 'string' ? { reason } : {}),
        message: `ingestion is blocked by billing${typeof reason === 'string' ? ` (${reason})` : ''}; ${this.queue.size} record(s) kept on storage, probing with backoff`,
      });
    }
    this.parked = true;
    const { baseDelayMs, maxDelayMs } = this.config.billingProbe;
    let wait = equalJitter(this.parkAttempt++, baseDelayMs, maxDelayMs);
    // A Retry-After means the block lifts by itself then; an upgrade may lift it sooner, so probe at the earlier.
    const retryAfter = parseRetryAfter(answer.retryAfter, Number.MAX_SAFE_INTEGER);
    if (retryAfter !== undefined) wait = Math.min(wait, Math.max(retryAfter, 1000));
    this.retryAt = Date.now() + wait;
    this.saveState(BILLING_BLOCK, JSON.stringify({ retry_at: this.retryAt, attempt: this.parkAttempt }));
  }

  /** A block seen by a previous process: start parked, and probe when it would have. */
  private restorePark(): void {
    try {
      const saved = JSON.parse(this.config.state.getState(BILLING_BLOCK) ?? 'null') as { retry_at?: unknown; attempt?: unknown } | null;
      if (!saved || typeof saved.retry_at !== 'number' || typeof saved.attempt !== 'number') return;
      this.parked = true;
      this.parkAttempt = saved.attempt;
      this.retryAt = Math.min(saved.retry_at, Date.now() + this.config.billingProbe.maxDelayMs);
    } catch {
      // unreadable: start unparked; the first answer tells
    }
  }

  private saveState(key: string, value: string | undefined): void {
    try {
      this.config.state.setState(key, value);
    } catch {
      // the block is still known to this process
    }
  }

  private backoff(attempt: number): number {
    return fullJitter(attempt, this.config.retry.baseDelayMs, this.config.retry.maxDelayMs);
  }

  /** 5xx, 408, network errors: exponential backoff with full jitter; a Retry-After is a floor. */
  private transient(retryAfterHeader: string | null): void {
    let wait = this.backoff(++this.attempt);
    const retryAfter = parseRetryAfter(retryAfterHeader, this.config.retry.maxRetryAfterMs);
    if (retryAfter !== undefined) wait = Math.max(wait, retryAfter);
    this.retryAt = Date.now() + wait;
    this.config.debug?.(`kept ${this.queue.size} record(s); next attempt in ${wait} ms`);
  }
}
