import { BreadcrumbRing } from './breadcrumbs.js';
import { Delivery } from './delivery.js';
import { encodeEnvironment, SDK_NAME, SDK_VERSION, unref } from './environment.js';
import { describeError, storable } from './errors.js';
import { MemoryStorage } from './memory-storage.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { Identity } from './identity.js';
import { DurableQueue } from './queue.js';
import { Sessions } from './session.js';
import type { Breadcrumb, ExceptionBody, FlushResult, QueueStorage, Severity, TallyIssue, TallyOptions, TallyStats, WireEvent } from './types.js';
import { uuidv7 } from './uuid.js';
import { checkContextId, checkProperties, checkText, LIMITS, utf8Length } from './validate.js';

/** What differs between Node and the browser. */
export interface Platform {
  sessionTimeoutMs: number;
  environment(): Record<string, unknown>;
  storage(options: TallyOptions, report: (issue: TallyIssue) => void): QueueStorage;
  /** Exit and crash hooks; returns their removal. */
  install(client: TallyClient, options: ResolvedOptions): () => void;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Waits for `p`, but not past `deadline`; the timer is cleared so it never holds a process open. */
function within(p: Promise<unknown>, deadline: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
  return Promise.race([p.then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}

export class TallyClient {
  readonly options: ResolvedOptions;
  private readonly storage: QueueStorage;
  private readonly queue: DurableQueue;
  private readonly delivery: Delivery;
  private readonly sessions: Sessions;
  private readonly crumbs: BreadcrumbRing;
  private readonly environment: Record<string, unknown>;
  private readonly identity: Identity;
  private account: string | undefined;
  private license: string | undefined;
  private refused = 0;
  private pumpScheduled = false;
  private closing: Promise<FlushResult> | undefined;
  private readonly flushTimer: ReturnType<typeof setInterval>;
  private readonly uninstall: () => void;

  constructor(options: TallyOptions, platform: Platform) {
    this.options = resolveOptions(options, platform);
    const o = this.options;
    const report = (issue: TallyIssue) => this.report(issue);
    this.storage = options.storage === 'memory' ? new MemoryStorage() : (options.storage ?? platform.storage(options, report));
    this.identity = new Identity(this.storage, options.actorId, (err) => this.report({ code: 'storage_error', message: `could not save the actor id: ${String(err)}` }));
    this.environment = { ...platform.environment(), product: o.product, app_version: o.productVersion, sdk: SDK_NAME, sdk_version: SDK_VERSION, ...options.environment };
    this.crumbs = new BreadcrumbRing(o.maxBreadcrumbs);
    this.queue = new DurableQueue(this.storage, { maxRecords: o.maxQueueRecords, maxBytes: o.maxQueueBytes }, report);
    this.sessions = new Sessions(
      this.queue,
      this.storage,
      { product: o.product, productVersion: o.productVersion, timeoutMs: o.sessionTimeoutMs, persistEveryMs: 1000 },
      { actorId: () => this.actorId, accountId: () => this.account, licenseId: () => this.license },
    );
    let header: string | undefined;
    this.delivery = new Delivery(this.queue, { ...o, environmentHeader: () => (header ??= encodeEnvironment(this.environment)), state: this.storage }, report);
    // Order matters: a session resumed from the previous page is not an orphan; the orphans of a
    // crashed process are ended (sdk_recovery) before this process's session starts.
    const resumed = this.sessions.resume(Date.now());
    this.queue.open((loaded) => this.sessions.recover(loaded, Date.now()));
    if (!resumed && o.autoSession) this.startSession();
    this.flushTimer = unref(setInterval(() => this.schedulePump(), o.flushIntervalMs));
    this.uninstall = platform.install(this, o);
    void this.queue.ready.then(() => this.schedulePump());
  }

  /** The id events are sent with: the identified user, else this device's anonymous id. */
  get actorId(): string {
    return this.identity.actorId;
  }

  get sessionId(): string | undefined {
    return this.sessions.current?.session_id;
  }

  /** Queues an event; returns its event_id, or undefined when it was refused (see onError). */
  track(category: string, name: string, properties?: Record<string, string | number | boolean | undefined>): string | undefined {
    if (this.closing) return this.refuse('client_closed', 'track() after shutdown()');
    const bad = checkText('category', category, LIMITS.category) ?? checkText('name', name, LIMITS.name);
    if (bad) return this.refuse('invalid_event', bad);
    const props = checkProperties(properties);
    if (props.reason) return this.refuse(props.reason, props.message!);
    const now = Date.now();
    const sessionId = this.sessions.touch(now);
    const event: WireEvent = {
      event_id: uuidv7(now),
      category,
      name,
      timestamp: iso(now),
      actor_id: this.actorId,
      product: this.options.product,
      product_version: this.options.productVersion,
      ...(props.properties ? { properties: props.properties } : {}),
      ...(sessionId ? { session_id: sessionId } : {}),
      ...this.context(),
      ...(this.options.schemaVersion !== undefined ? { schema_version: this.options.schemaVersion } : {}),
    };
    const bytes = utf8Length(JSON.stringify(event));
    if (bytes > LIMITS.eventBytes) return this.refuse('event_too_large', `event ${category}/${name} is ${bytes} bytes serialised; at most ${LIMITS.eventBytes}`);
    this.queue.put({ id: event.event_id, kind: 'event', body: event });
    this.crumb('track', `${category}/${name}`);
    if (this.queue.countEvents() >= this.options.flushAt) this.schedulePump();
    return event.event_id;
  }

  /** Links this device's anonymous id to a user id (sent once), and tracks as that user from now on. */
  identify(userId: string): void {
    const bad = checkText('userId', userId, LIMITS.actorId);
    if (bad) return void this.refuse('invalid_event', `identify: ${bad}`);
    const id = this.identity;
    if (userId === id.userId) return;
    if (id.userId !== undefined) {
      // The server links an anonymous id to one user only (409 otherwise): call reset() at logout.
      this.report({ code: 'refused', message: `identify("${userId}") while identified as another user: tracking as the new user without a link; call reset() at logout` });
    } else {
      this.queue.put({
        id: uuidv7(),
        kind: 'identify',
        body: { anonymous_actor_id: id.anonymousId, identified_actor_id: userId, identified_at: iso(Date.now()), product: this.options.product, product_version: this.options.productVersion },
      });
      this.schedulePump();
    }
    id.userId = userId;
    id.save();
    this.crumb('identify', 'identify');
  }

  /** Logout: a new anonymous id, no user, no account or license, and a new session if one was open. */
  reset(): void {
    const hadSession = this.sessions.current !== undefined;
    if (hadSession) this.sessions.end(Date.now());
    this.identity.reset();
    this.account = this.license = undefined;
    if (hadSession) this.startSession();
  }

  setAccount(accountId: string): void {
    const bad = checkContextId('account_id', accountId);
    if (bad) return void this.report({ code: 'refused', reason: 'invalid_account_id', message: `setAccount: ${bad}; ignored` });
    this.account = accountId;
    this.crumb('account', 'setAccount');
  }

  clearAccount(): void {
    this.account = undefined;
    this.crumb('account', 'clearAccount');
  }

  setLicense(licenseId: string): void {
    const bad = checkContextId('license_id', licenseId);
    if (bad) return void this.report({ code: 'refused', reason: 'invalid_license_id', message: `setLicense: ${bad}; ignored` });
    this.license = licenseId;
    this.crumb('license', 'setLicense');
  }

  clearLicense(): void {
    this.license = undefined;
    this.crumb('license', 'clearLicense');
  }

  /** Ends the open session, if any, and starts a new one with the current account and license. */
  startSession(properties?: Record<string, string | number | boolean | undefined>): string {
    const props = checkProperties(properties);
    if (props.reason) this.report({ code: 'refused', reason: props.reason, message: `startSession: ${props.message}; the session starts without properties` });
    const id = this.sessions.start(Date.now(), props.properties);
    this.crumb('session', 'startSession');
    this.schedulePump();
    return id;
  }

  endSession(): void {
    if (!this.sessions.current) return;
    this.sessions.end(Date.now());
    this.crumb('session', 'endSession');
    this.schedulePump();
  }

  /** Queues an exception with the recent breadcrumbs; returns its exception_id. */
  captureException(error: unknown, opts: { severity?: Severity } = {}): string | undefined {
    const now = Date.now();
    const { type, message, stack } = describeError(error);
    const sessionId = this.sessions.touch(now);
    const crumbs = this.crumbs.snapshot();
    const body: ExceptionBody = {
      exception_id: uuidv7(now),
      exception_type: type,
      severity: opts.severity === 'fatal' ? 'fatal' : 'non_fatal',
      occurred_at: iso(now),
      actor_id: this.actorId,
      product: this.options.product,
      product_version: this.options.productVersion,
      ...(message !== undefined ? { message } : {}),
      ...(stack !== undefined ? { stack_trace: stack } : {}),
      ...(crumbs.length > 0 ? { breadcrumbs: crumbs } : {}),
      ...(sessionId ? { session_id: sessionId } : {}),
      ...this.context(),
      environment_context: this.environment,
    };
    this.queue.put({ id: body.exception_id, kind: 'exception', body });
    this.schedulePump();
    return body.exception_id;
  }

  addBreadcrumb(message: string, data?: Record<string, string | number | boolean>): void {
    this.crumb('manual', message, data);
  }

  /** Sends what can be sent now. Does not wait out a backoff: shutdown() does, up to its timeout. */
  async flush(): Promise<FlushResult> {
    await this.queue.ready;
    await this.delivery.pump();
    await this.queue.settled(); // what is left is on storage, not only in memory
    return this.result();
  }

  /** After a 401/403 was fixed (a new key deployed server-side): sends again. */
  resume(): void {
    this.delivery.paused = undefined;
    this.schedulePump();
  }

  /**
   * Ends the session, then sends until the queue is empty or the time is up. What is left stays
   * on storage for the next start. Safe to call twice.
   */
  shutdown(opts: { timeoutMs?: number } = {}): Promise<FlushResult> {
    this.closing ??= this.close(opts.timeoutMs ?? 5000);
    return this.closing;
  }

  stats(): TallyStats {
    const next = this.delivery.nextAttemptAt;
    return {
      queued: this.queue.size,
      queuedBytes: this.queue.bytes,
      accepted: this.delivery.accepted,
      duplicates: this.delivery.duplicates,
      rejected: this.delivery.rejected,
      refused: this.refused,
      dropped: this.queue.dropped,
      parked: this.delivery.parked,
      ...(this.delivery.paused ? { paused: this.delivery.paused } : {}),
      ...(next !== undefined ? { nextAttemptAt: next } : {}),
    };
  }

  /** @internal Node's exit hook: synchronous, so only storage writes. A crash leaves the session for recovery. */
  exitNow(crashed: boolean): void {
    if (this.closing) return;
    const now = Date.now();
    if (crashed) {
      this.sessions.touch(now);
      this.sessions.persist();
    } else this.sessions.end(now);
    this.sessions.close();
    this.storage.persistNow?.();
  }

  /** @internal Browser page exit: one keepalive request; the rest is already on storage. */
  pageExit(): void {
    this.sessions.persist();
    this.storage.persistNow?.();
    void this.delivery.pump({ keepalive: true });
  }

  private async close(timeoutMs: number): Promise<FlushResult> {
    const deadline = Date.now() + timeoutMs;
    clearInterval(this.flushTimer);
    this.uninstall();
    this.sessions.end(Date.now());
    this.sessions.close();
    await within(this.queue.ready, deadline);
    while (Date.now() < deadline) {
      await within(this.delivery.pump(), deadline);
      if (this.queue.size === 0 || this.delivery.paused) break;
      const next = this.delivery.nextAttemptAt ?? Date.now() + 20;
      if (next >= deadline) break;
      await within(new Promise<void>(() => undefined), next);
    }
    this.delivery.close();
    // A request still in flight may yet be answered: close the storage after it, not under it,
    // and wait for that unless the time is already up.
    const closed = this.delivery
      .pump()
      .then(() => this.queue.settled())
      .then(() => this.storage.close?.())
      .catch(() => undefined);
    await within(closed, Math.max(deadline, Date.now() + 100));
    return this.result();
  }

  private result(): FlushResult {
    return { delivered: this.queue.size === 0, remaining: this.queue.size };
  }

  private context(): { account_id?: string; license_id?: string } {
    return { ...(this.account !== undefined ? { account_id: this.account } : {}), ...(this.license !== undefined ? { license_id: this.license } : {}) };
  }

  private schedulePump(): void {
    if (this.pumpScheduled || this.closing) return;
    this.pumpScheduled = true;
    // A macrotask later: a loop of track() calls makes one batch, not one per flushAt.
    unref(
      setTimeout(() => {
        this.pumpScheduled = false;
        void this.delivery.pump();
      }, 0),
    );
  }

  private crumb(type: Breadcrumb['type'], message: string, data?: Record<string, string | number | boolean>): void {
    this.crumbs.add({ at: iso(Date.now()), type, message: storable(message).slice(0, 200), ...(data ? { data } : {}) });
  }

  private refuse(reason: string, message: string): undefined {
    this.refused++;
    this.report({ code: 'refused', reason, message: `${message}; not queued` });
    return undefined;
  }

  private report(issue: TallyIssue): void {
    this.options?.logger?.warn(issue.message, issue.reason ? { code: issue.code, reason: issue.reason } : undefined);
    try {
      this.options?.onError?.(issue);
    } catch {
      // the application's callback must not break delivery
    }
  }
}
