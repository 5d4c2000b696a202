import { BreadcrumbRing } from './breadcrumbs.js';
import { checkContext, merge, syncScopeStore, timeOf, type ScopeStore } from './context.js';
import { pageProperties } from './page.js';
import { Delivery } from './delivery.js';
import { encodeEnvironment, SDK_NAME, SDK_VERSION, unref } from './environment.js';
import { describeError, storable } from './errors.js';
import { MemoryStorage } from './memory-storage.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { Identity } from './identity.js';
import { DurableQueue } from './queue.js';
import { Sessions } from './session.js';
import { TallyScope } from './scope.js';
import type {
  Breadcrumb,
  CallContext,
  CaptureOptions,
  ExceptionBody,
  FlushResult,
  IdentifyOptions,
  PageOptions,
  Properties,
  QueueStorage,
  TallyIssue,
  TallyOptions,
  TallyStats,
  Traits,
  TrackOptions,
  WireEvent,
} from './types.js';
import { uuidv7 } from './uuid.js';
import { checkContextId, checkProperties, checkText, LIMITS, utf8Length } from './validate.js';

/** What differs between Node and the browser. */
export interface Platform {
  sessionTimeoutMs: number;
  environment(): Record<string, unknown>;
  storage(options: TallyOptions, report: (issue: TallyIssue) => void): QueueStorage;
  /** Exit and crash hooks (and, in a browser, page views); returns their removal. */
  install(client: TallyClient, options: ResolvedOptions): () => void;
  /** Browser: the page's URL, title and referrer, for page(). */
  page?(): { url: string; title?: string; referrer?: string };
  /** Scopes that follow async calls (Node: AsyncLocalStorage); default: the synchronous part only. */
  scopes?(): ScopeStore;
}

const CONSENT = 'consent';
type Who = { actor: string; account?: string; license?: string; session?: string };

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
  /** Absent in server mode: the process has no identity of its own. */
  private readonly identity: Identity | undefined;
  private readonly scopes: ScopeStore;
  private readonly globals = new Map<string, string | number | boolean>();
  private account: string | undefined;
  private license: string | undefined;
  private lastPage: string | undefined;
  private consentOut: boolean;
  /** Opted out at start or since: the records still loading from storage are deleted as they arrive. */
  private dropLoaded = false;
  private refused = 0;
  private filtered = 0;
  private pumpScheduled = false;
  private closing: Promise<FlushResult> | undefined;
  private readonly flushTimer: ReturnType<typeof setInterval> | undefined;
  private readonly uninstall: () => void;
  /** Server mode: the actor of an exception no call or scope names (an uncaught error). */
  private readonly processActor: string;

  constructor(
    options: TallyOptions,
    private readonly platform: Platform,
  ) {
    this.options = resolveOptions(options, platform);
    const o = this.options;
    const report = (issue: TallyIssue) => this.report(issue);
    // Disabled: memory only, so that not even a queue directory is made.
    this.storage = o.disabled || options.storage === 'memory' ? new MemoryStorage() : (options.storage ?? platform.storage(options, report));
    this.identity =
      o.mode === 'server'
        ? undefined
        : new Identity(this.storage, options.actorId, (err) => this.report({ code: 'storage_error', message: `could not save the actor id: ${String(err)}` }));
    this.scopes = platform.scopes?.() ?? syncScopeStore();
    this.processActor = options.actorId ?? 'server';
    this.environment = {
      ...platform.environment(),
      product: o.product,
      app_version: o.productVersion,
      sdk: SDK_NAME,
      sdk_version: SDK_VERSION,
      ...options.environment,
    };
    this.crumbs = new BreadcrumbRing(o.maxBreadcrumbs);
    this.queue = new DurableQueue(this.storage, { maxRecords: o.maxQueueRecords, maxBytes: o.maxQueueBytes }, report);
    this.sessions = new Sessions(
      this.queue,
      this.storage,
      { product: o.product, productVersion: o.productVersion, timeoutMs: o.mode === 'server' ? 0 : o.sessionTimeoutMs, persistEveryMs: 1000 },
      { actorId: () => this.identity?.actorId ?? '', accountId: () => this.account, licenseId: () => this.license },
    );
    let header: string | undefined;
    // Server mode sends no X-Environment-Data: the server would file the process's runtime as each
    // user's environment. Exceptions still carry it as environment_context: that is where they happened.
    const environmentHeader = () => (o.mode === 'server' ? undefined : (header ??= encodeEnvironment(this.environment)));
    this.delivery = new Delivery(this.queue, { ...o, environmentHeader, state: this.storage, debug: o.debug }, report);
    this.consentOut = this.storage.getState(CONSENT) === undefined ? o.optOutByDefault : this.storage.getState(CONSENT) === 'out';
    if (o.disabled) {
      this.uninstall = () => undefined;
      o.debug?.('disabled: nothing will be stored or sent');
      return;
    }
    // Order matters: a session resumed from the previous page is not an orphan; the orphans of a
    // crashed process are ended (sdk_recovery) before this process's session starts.
    const resumed = !this.consentOut && o.mode === 'client' && this.sessions.resume(Date.now());
    this.dropLoaded = this.consentOut;
    this.queue.open((loaded) => {
      const fix = this.sessions.recover(loaded, Date.now());
      if (!this.dropLoaded) return fix;
      // Opted out: what a previous run left queued is deleted (a page that went away right after
      // optOut() may not have committed its IndexedDB deletes), even if optIn() came since.
      return { put: fix.put, remove: [...fix.remove, ...loaded.filter((r) => r.kind !== 'session_end').map((r) => r.id)] };
    });
    if (!resumed && o.autoSession && o.mode === 'client' && !this.consentOut) this.startSession();
    this.flushTimer = unref(setInterval(() => this.schedulePump(), o.flushIntervalMs));
    this.uninstall = platform.install(this, o);
    void this.queue.ready.then(() => this.schedulePump());
  }

  /** The id events are sent with: the identified user, else this device's anonymous id. Undefined in server mode. */
  get actorId(): string | undefined {
    return this.identity?.actorId;
  }

  get sessionId(): string | undefined {
    return this.sessions.current?.session_id;
  }

  /** True after optOut() (this device or process, remembered on storage) until optIn(). */
  get optedOut(): boolean {
    return this.consentOut;
  }

  /** Queues an event; returns its event_id, or undefined when it was not queued (see onError, and `debug`). */
  track(category: string, name: string, properties?: Properties, opts?: TrackOptions): string | undefined {
    if (this.inactive(`event ${category}/${name}`)) return undefined;
    const bad = checkText('category', category, LIMITS.category) ?? checkText('name', name, LIMITS.name);
    if (bad) return this.refuse('invalid_event', bad);
    return this.event(category, name, properties, opts);
  }

  /**
   * A page view: the event page/view with `url` (without its query string unless
   * `pageQueryString`), `path`, `title` and `referrer` (the previous page() URL, else
   * document.referrer). In Node, pass `url` (a server rendering pages for its users).
   */
  page(properties?: Properties, opts: PageOptions = {}): string | undefined {
    if (this.inactive('page view')) return undefined;
    // Server mode: the previous page view was another user's, so only opts.referrer counts.
    const view = pageProperties(this.platform.page?.(), opts, this.identity ? this.lastPage : undefined, this.options.pageQueryString);
    if (!view) return this.refuse('invalid_event', 'page() needs a url outside a browser');
    const id = this.event('page', 'view', { ...view.properties, ...properties }, opts);
    if (id) this.lastPage = view.url;
    return id;
  }

  /**
   * Links an anonymous id to a user id, with the user's traits (kept on the server, the newest per
   * user, and shown with the actor). Default mode: this device's anonymous id, and later calls
   * are made as the user. Server mode: see IdentifyOptions.anonymousId; nothing changes globally.
   */
  identify(userId: string, traits?: Traits, opts: IdentifyOptions = {}): void {
    if (this.inactive('identify')) return;
    const bad = checkText('userId', userId, LIMITS.actorId);
    if (bad) return void this.refuse('invalid_event', `identify: ${bad}`);
    const t = checkProperties(traits);
    if (t.reason) return void this.refuse(t.reason, `identify: traits: ${t.message}`);
    const at = timeOf(opts.timestamp, Date.now());
    if (at === undefined) return void this.refuse('invalid_event', 'identify: timestamp is not a date');
    const ctx = merge(this.scopes.current(), opts);
    const id = this.identity;
    if (!id || opts.anonymousId !== undefined) {
      const anonymous = opts.anonymousId ?? (ctx.actorId !== undefined && ctx.actorId !== userId ? ctx.actorId : userId);
      const badAnon = checkText('anonymousId', anonymous, LIMITS.actorId);
      if (badAnon) return void this.refuse('invalid_event', `identify: ${badAnon}`);
      return this.link(anonymous, userId, t.properties, at);
    }
    if (userId === id.userId) {
      if (t.properties) this.link(id.anonymousId, userId, t.properties, at); // the same link again, with new traits
      return;
    }
    if (id.userId !== undefined) {
      // The server links an anonymous id to one user only (409 otherwise): call reset() at logout.
      this.report({
        code: 'misuse',
        message: `identify("${userId}") while identified as another user: tracking as the new user without a link; call reset() at logout`,
      });
    } else this.link(id.anonymousId, userId, t.properties, at);
    id.userId = userId;
    id.save();
    this.crumb('identify', 'identify');
  }

  /** Logout: a new anonymous id, no user, no account or license, and a new session if one was open. */
  reset(): void {
    if (!this.identity) return void this.misuse('reset()');
    const hadSession = this.sessions.current !== undefined;
    if (hadSession) this.sessions.end(Date.now());
    this.identity.reset();
    this.account = this.license = undefined;
    if (hadSession && !this.inactive('session')) this.startSession();
  }

  setAccount(accountId: string): void {
    if (!this.identity) return void this.misuse('setAccount()');
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
    if (!this.identity) return void this.misuse('setLicense()');
    const bad = checkContextId('license_id', licenseId);
    if (bad) return void this.report({ code: 'refused', reason: 'invalid_license_id', message: `setLicense: ${bad}; ignored` });
    this.license = licenseId;
    this.crumb('license', 'setLicense');
  }

  clearLicense(): void {
    this.license = undefined;
    this.crumb('license', 'clearLicense');
  }

  /** Properties sent with every later event (a call's own properties win). Kept for the life of the client. */
  register(properties: Properties): void {
    const next = Object.fromEntries(this.globals);
    for (const [k, v] of Object.entries(properties ?? {})) if (v !== undefined) next[k] = v;
    const p = checkProperties(next);
    if (p.reason) return void this.report({ code: 'refused', reason: p.reason, message: `register: ${p.message}; ignored` });
    for (const [k, v] of Object.entries(p.properties ?? {})) this.globals.set(k, v);
  }

  unregister(...keys: string[]): void {
    for (const k of keys) this.globals.delete(k);
  }

  /**
   * Stops everything from now on, and remembers it on storage (the next start stays opted out):
   * no events, page views, identify, sessions or exceptions are queued, and what is queued and
   * not yet sent is deleted. An open session is ended, unless its start was never sent either.
   */
  optOut(): void {
    if (this.options.disabled) return;
    this.saveConsent('out');
    this.consentOut = true;
    this.sessions.abandon(Date.now());
    this.dropLoaded = true; // records still loading from storage
    this.purge();
    this.schedulePump();
  }

  /** Undoes optOut() (remembered on storage), and starts a session as init would. */
  optIn(): void {
    if (this.options.disabled) return;
    this.saveConsent('in');
    const was = this.consentOut;
    this.consentOut = false;
    if (was && this.options.autoSession && this.identity && !this.sessions.current) this.startSession();
  }

  /** A bound API whose calls are made for this actor (account, license, session): one per request in a server. */
  scope(context: CallContext): TallyScope {
    return new TallyScope(this, context);
  }

  /** Runs `fn` with `context` as the default of every call made inside it (Node: across awaits too). */
  withScope<T>(context: CallContext, fn: () => T): T {
    return this.scopes.run(merge(this.scopes.current(), context), fn);
  }

  /**
   * Ends the open session, if any, and starts a new one with the current account and license.
   * Server mode: a session of the call's actor (opts or scope), returned for the caller to pass
   * on as sessionId; end it with endSession({sessionId}).
   */
  startSession(properties?: Properties, opts?: CallContext): string | undefined {
    if (this.inactive('session')) return undefined;
    const props = checkProperties(properties);
    if (props.reason) this.report({ code: 'refused', reason: props.reason, message: `startSession: ${props.message}; the session starts without properties` });
    if (!this.identity) {
      const who = this.who(opts, 'startSession');
      if (!who) return undefined;
      const now = Date.now();
      const id = uuidv7(now);
      const body = {
        session_id: id,
        actor_id: who.actor,
        product: this.options.product,
        product_version: this.options.productVersion,
        started_at: iso(now),
        ...(props.properties ? { properties: props.properties } : {}),
        ...accountLicense(who),
      };
      this.queue.put({ id: uuidv7(now), kind: 'session_start', body });
      this.schedulePump();
      return id;
    }
    const id = this.sessions.start(Date.now(), props.properties);
    this.crumb('session', 'startSession');
    this.schedulePump();
    return id;
  }

  endSession(opts?: { sessionId?: string }): void {
    if (!this.identity) {
      if (this.options.disabled) return;
      if (this.closing) return void this.refuse('client_closed', 'endSession() after shutdown()');
      const sessionId = opts?.sessionId ?? this.scopes.current()?.sessionId;
      if (!sessionId) return this.misuse('endSession() without a sessionId');
      this.queue.put({ id: uuidv7(), kind: 'session_end', body: { session_id: sessionId, ended_at: iso(Date.now()), end_reason: 'normal' } });
      return this.schedulePump();
    }
    if (!this.sessions.current) return;
    this.sessions.end(Date.now());
    this.crumb('session', 'endSession');
    this.schedulePump();
  }

  /** Queues an exception with the recent breadcrumbs; returns its exception_id. Never sampled, but dropped after optOut(). */
  captureException(error: unknown, opts: CaptureOptions = {}): string | undefined {
    if (this.inactive('exception')) return undefined;
    const now = Date.now();
    const at = timeOf(opts.timestamp, now);
    // An exception in server mode without an actor (an uncaught error) is the process's own.
    const who = this.who(opts, 'captureException', now, this.processActor);
    if (!who || at === undefined) return at === undefined ? this.refuse('invalid_event', 'captureException: timestamp is not a date') : undefined;
    const { type, message, stack } = describeError(error);
    const crumbs = this.crumbs.snapshot();
    const body: ExceptionBody = {
      exception_id: uuidv7(now),
      exception_type: type,
      severity: opts.severity === 'fatal' ? 'fatal' : 'non_fatal',
      occurred_at: iso(at),
      actor_id: who.actor,
      product: this.options.product,
      product_version: this.options.productVersion,
      ...(message !== undefined ? { message } : {}),
      ...(stack !== undefined ? { stack_trace: stack } : {}),
      ...(crumbs.length > 0 ? { breadcrumbs: crumbs } : {}),
      ...(who.session ? { session_id: who.session } : {}),
      ...accountLicense(who),
      environment_context: this.environment,
    };
    this.queue.put({ id: body.exception_id, kind: 'exception', body });
    this.options.debug?.(`queued exception ${type} (${body.exception_id})`);
    this.schedulePump();
    return body.exception_id;
  }

  addBreadcrumb(message: string, data?: Record<string, string | number | boolean>): void {
    this.crumb('manual', message, data);
  }

  /** Sends what can be sent now. Does not wait out a backoff: shutdown() does, up to its timeout. */
  async flush(): Promise<FlushResult> {
    if (this.options.disabled) return this.result();
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
    this.closing ??= this.options.disabled ? Promise.resolve(this.result()) : this.close(opts.timeoutMs ?? 5000);
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
      filtered: this.filtered,
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

  /** Builds, samples, filters and queues one event. */
  private event(category: string, name: string, properties: Properties | undefined, opts: TrackOptions = {}): string | undefined {
    const merged = this.globals.size > 0 ? { ...Object.fromEntries(this.globals), ...properties } : properties;
    const props = checkProperties(merged);
    if (props.reason) return this.refuse(props.reason, props.message!);
    const now = Date.now();
    const at = timeOf(opts.timestamp, now);
    if (at === undefined) return this.refuse('invalid_event', `event ${category}/${name}: timestamp is not a date`);
    const who = this.who(opts, `event ${category}/${name}`, now);
    if (!who) return undefined;
    if (this.options.sampleRate < 1 && Math.random() >= this.options.sampleRate)
      return this.filter(`event ${category}/${name}: sampled out (sampleRate ${this.options.sampleRate})`);
    let event: WireEvent | null | undefined = {
      event_id: uuidv7(now),
      category,
      name,
      timestamp: iso(at),
      actor_id: who.actor,
      product: this.options.product,
      product_version: this.options.productVersion,
      ...(props.properties ? { properties: props.properties } : {}),
      ...(who.session ? { session_id: who.session } : {}),
      ...accountLicense(who),
      ...(this.options.schemaVersion !== undefined ? { schema_version: this.options.schemaVersion } : {}),
    };
    if (this.options.beforeSend) {
      try {
        event = this.options.beforeSend(event);
      } catch (err) {
        this.filtered++;
        this.report({
          code: 'refused',
          reason: 'before_send_failed',
          message: `beforeSend threw on ${category}/${name} (${String(err)}); the event is dropped`,
        });
        return undefined;
      }
      if (!event) return this.filter(`event ${category}/${name}: beforeSend returned ${String(event)}`);
      const again =
        checkText('category', event.category, LIMITS.category) ?? checkText('name', event.name, LIMITS.name) ?? checkProperties(event.properties).message;
      if (again) return this.refuse('invalid_event', `beforeSend's result: ${again}`);
    }
    const bytes = utf8Length(JSON.stringify(event));
    if (bytes > LIMITS.eventBytes)
      return this.refuse('event_too_large', `event ${event.category}/${event.name} is ${bytes} bytes serialised; at most ${LIMITS.eventBytes}`);
    this.queue.put({ id: event.event_id, kind: 'event', body: event });
    this.crumb('track', `${event.category}/${event.name}`);
    this.options.debug?.(`queued event ${event.category}/${event.name} (${event.event_id}) for actor ${event.actor_id}`, event.properties);
    if (this.queue.countEvents() >= this.options.flushAt) this.schedulePump();
    return event.event_id;
  }

  /**
   * The actor, account, license and session of a call: the call's own over the scope's, and,
   * outside server mode, the client's own under both. Undefined (and reported) when unusable.
   */
  private who(opts: CallContext | undefined, what: string, now = Date.now(), fallbackActor?: string): Who | undefined {
    const c = merge(this.scopes.current(), { actorId: opts?.actorId, accountId: opts?.accountId, licenseId: opts?.licenseId, sessionId: opts?.sessionId });
    const bad = checkContext(c);
    if (bad) return this.refuse('invalid_context', `${what}: ${bad}`);
    const id = this.identity;
    if (!id) {
      c.actorId ??= fallbackActor;
      if (c.actorId === undefined) return this.refuse('missing_actor', `${what}: no actorId (server mode: pass it in the call, or use scope() or withScope())`);
      return { actor: c.actorId, account: c.accountId, license: c.licenseId, session: c.sessionId };
    }
    const own = c.actorId === undefined || c.actorId === id.actorId;
    // The client's session is its own actor's: another actor's event carries only the session it names.
    const session = c.sessionId ?? (own ? this.sessions.touch(now) : undefined);
    return { actor: c.actorId ?? id.actorId, account: c.accountId ?? this.account, license: c.licenseId ?? this.license, session };
  }

  /** Disabled, closed or opted out: nothing is queued. */
  private inactive(what: string): boolean {
    if (this.options.disabled) return true;
    if (this.closing) {
      this.refuse('client_closed', `${what} after shutdown()`);
      return true;
    }
    if (!this.consentOut) return false;
    this.filter(`${what}: opted out`);
    return true;
  }

  private link(anonymous: string, userId: string, traits: Traits | undefined, at: number): void {
    this.queue.put({
      id: uuidv7(),
      kind: 'identify',
      body: {
        anonymous_actor_id: anonymous,
        identified_actor_id: userId,
        identified_at: iso(at),
        product: this.options.product,
        product_version: this.options.productVersion,
        ...(traits ? { traits: traits as Record<string, string | number | boolean> } : {}),
      },
    });
    this.options.debug?.(`queued identify ${anonymous} → ${userId}`, traits);
    this.schedulePump();
  }

  /** Opted out: deletes every queued record but session ends (which only close what the server already has) and those in flight. */
  private purge(): void {
    const gone = [...this.queue.records()].filter((r) => r.kind !== 'session_end' && !this.queue.inflight.has(r.id)).map((r) => r.id);
    this.queue.remove(gone);
    if (gone.length > 0) this.options.debug?.(`opted out: ${gone.length} queued record(s) deleted`);
  }

  private saveConsent(value: 'in' | 'out'): void {
    try {
      this.storage.setState(CONSENT, value);
    } catch (err) {
      this.report({ code: 'storage_error', message: `could not save the opt-${value} choice: ${String(err)}` });
    }
  }

  private result(): FlushResult {
    return { delivered: this.queue.size === 0, remaining: this.queue.size };
  }

  private schedulePump(): void {
    if (this.pumpScheduled || this.closing || this.options.disabled) return;
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
    // Server mode: one ring for the process would put other users' calls in an exception.
    if (!this.identity) return;
    this.crumbs.add({ at: iso(Date.now()), type, message: storable(message).slice(0, 200), ...(data ? { data } : {}) });
  }

  private filter(why: string): undefined {
    this.filtered++;
    this.options.debug?.(`not queued: ${why}`);
    return undefined;
  }

  private refuse(reason: string, message: string): undefined {
    this.refused++;
    this.report({ code: 'refused', reason, message: `${message}; not queued` });
    return undefined;
  }

  private misuse(call: string): void {
    this.report({
      code: 'misuse',
      message: `${call} does not apply in ${this.options.mode} mode; ignored${this.options.mode === 'server' ? ' (name the actor, account and license per call or in a scope)' : ''}`,
    });
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

function accountLicense(w: Who): { account_id?: string; license_id?: string } {
  return { ...(w.account !== undefined ? { account_id: w.account } : {}), ...(w.license !== undefined ? { license_id: w.license } : {}) };
}
