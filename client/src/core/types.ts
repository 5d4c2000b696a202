// Public types, and the wire shapes of CONTRACT.md. Absent optional fields are omitted, never null.

/** A flat property bag: strings, finite numbers and booleans (SPEC.md: no nesting, at most 20 keys). */
export type Properties = Record<string, string | number | boolean | undefined>;

export type Severity = 'fatal' | 'non_fatal';

/** What identify() keeps about a user on the server: a flat object with the rules of event properties. */
export type Traits = Properties;

/**
 * Who a call is about. In server-side mode (`mode: 'server'`) there is no identity of the
 * process: each call names its actor here, directly or through `client.scope()` / `withScope()`.
 * In the default mode, a field given here overrides the client's own for that one call.
 */
export interface CallContext {
  actorId?: string;
  accountId?: string;
  licenseId?: string;
  sessionId?: string;
}

export interface TrackOptions extends CallContext {
  /** When it happened (default: now): a Date, epoch milliseconds, or an RFC 3339 string. */
  timestamp?: Date | number | string;
}

export interface PageOptions extends TrackOptions {
  /** Default (browser): location.href without its query string and fragment. */
  url?: string;
  /** Default (browser): document.title. */
  title?: string;
  /** Default: the previous page() URL, else (browser) document.referrer without its query string. */
  referrer?: string;
}

export interface IdentifyOptions extends CallContext {
  /**
   * The anonymous id to link to the user. Default: this device's anonymous id (browser, Node
   * default mode); in server mode, the call's actorId when it differs from the user id, else the
   * user id itself (a self-link, which only sets traits).
   */
  anonymousId?: string;
  timestamp?: Date | number | string;
}

export interface CaptureOptions extends TrackOptions {
  severity?: Severity;
}

/** One element of the POST /v1/events array. */
export interface WireEvent {
  event_id: string;
  category: string;
  name: string;
  timestamp: string;
  actor_id: string;
  product: string;
  product_version: string;
  properties?: Record<string, string | number | boolean>;
  session_id?: string;
  account_id?: string;
  license_id?: string;
  schema_version?: string;
}

/** A session's start context: the body of POST /v1/events/sessions, and what sdk_recovery repeats. */
export interface SessionStartBody {
  session_id: string;
  actor_id: string;
  product: string;
  product_version: string;
  started_at: string;
  properties?: Record<string, string | number | boolean>;
  account_id?: string;
  license_id?: string;
}

export interface SessionEndBody {
  session_id: string;
  ended_at: string;
  end_reason: 'normal' | 'sdk_recovery';
  // Start context, on sdk_recovery only: lets the server create a session whose start was lost.
  actor_id?: string;
  product?: string;
  product_version?: string;
  started_at?: string;
  account_id?: string;
  license_id?: string;
}

export interface ExceptionBody {
  exception_id: string;
  exception_type: string;
  severity: Severity;
  occurred_at: string;
  actor_id: string;
  product: string;
  product_version: string;
  message?: string;
  stack_trace?: string;
  breadcrumbs?: Breadcrumb[];
  session_id?: string;
  account_id?: string;
  license_id?: string;
  environment_context?: Record<string, unknown>;
}

export interface IdentifyBody {
  anonymous_actor_id: string;
  identified_actor_id: string;
  identified_at: string;
  product: string;
  product_version: string;
  traits?: Record<string, string | number | boolean>;
}

/** A session the client has open: persisted so that a crash can be told to the server later. */
export interface SessionMarker extends SessionStartBody {
  last_activity: string;
}

export interface Breadcrumb {
  at: string;
  type: 'track' | 'identify' | 'session' | 'account' | 'license' | 'manual';
  message: string;
  data?: Record<string, string | number | boolean>;
}

/**
 * What the durable queue holds. `session_open` is never sent: it is the persisted state of an
 * open session, turned into an sdk_recovery end by the next process if this one dies.
 */
export type QueuedRecord =
  | { id: string; kind: 'event'; body: WireEvent }
  | { id: string; kind: 'session_start'; body: SessionStartBody }
  | { id: string; kind: 'session_end'; body: SessionEndBody }
  | { id: string; kind: 'exception'; body: ExceptionBody }
  | { id: string; kind: 'identify'; body: IdentifyBody }
  | { id: string; kind: 'session_open'; body: SessionMarker };

export type RecordKind = QueuedRecord['kind'];

/**
 * Where the queue lives. Records are upserted by id and come back from load() in first-put
 * order. A synchronous implementation (file, localStorage, memory) makes track() durable the
 * moment it returns; an asynchronous one (IndexedDB) makes it durable a moment later.
 * getState/setState hold a few small values (the anonymous id) and must answer synchronously.
 */
export interface QueueStorage {
  load(): QueuedRecord[] | Promise<QueuedRecord[]>;
  put(record: QueuedRecord): void | Promise<void>;
  remove(ids: readonly string[]): void | Promise<void>;
  getState(key: string): string | undefined;
  setState(key: string, value: string | undefined): void;
  /** The page or process is going away: write synchronously whatever is still in flight to storage. */
  persistNow?(): void;
  close?(): void | Promise<void>;
}

export interface Logger {
  warn(message: string, detail?: unknown): void;
  /** With `debug: true`: what is sent, and why something is not. Falls back to console.debug. */
  debug?(message: string, detail?: unknown): void;
  error?(message: string, detail?: unknown): void;
}

/** Something the application may want to know: a refusal, a drop, a pause. Also logged as a warning. */
export interface TallyIssue {
  code:
    | 'refused' // track() refused the event locally (too large, reserved key, bad property)
    | 'rejected' // the server rejected records for good (207 per event, 400, 404, 409, 422)
    | 'dropped' // the queue was full: the oldest records were dropped
    | 'unauthorized' // 401: sending paused
    | 'forbidden' // 403: sending paused
    | 'billing_blocked' // 402: queue parked on storage, probing with backoff
    | 'storage_error' // the storage failed; records are kept in memory
    | 'misuse'; // a call that does not fit the mode (setAccount in server mode, identify without a user…)
  message: string;
  status?: number;
  reason?: string;
  count?: number;
}

export interface TallyOptions {
  /** An API key with the `ingest` permission (safe to ship in an app). */
  apiKey: string;
  /** The Tally server's base URL, e.g. `https://tally.example.com`. */
  endpoint: string;
  /** The product slug, as created with POST /v1/products. */
  product: string;
  productVersion: string;
  /**
   * 'client' (default): one user per process or page, with a persisted anonymous id, identify()
   * and setAccount() for later calls, and an automatic session. 'server': a backend serving many
   * users; nothing is global: every call names its actor (and account, license, session), directly
   * or through scope() / withScope(). No automatic session, no uncaught-error capture by default.
   */
  mode?: 'client' | 'server';
  /** Overrides the persisted anonymous actor id. In server mode: the actor of uncaught errors (default 'server'). */
  actorId?: string;
  /** Does nothing at all: no storage, no requests, no hooks. For tests and environments that must not report. */
  disabled?: boolean;
  /** Logs (logger.debug, else console.debug) every record queued and sent, and why any was not. */
  debug?: boolean;
  /** Start opted out until optIn() is called (consent first). A stored choice wins. */
  optOutByDefault?: boolean;
  /**
   * Called with each event (track, page) before it is queued. Return it (changed or not), or
   * null to drop it. Its result is checked again; a throw drops the event and is reported.
   */
  beforeSend?: (event: WireEvent) => WireEvent | null | undefined;
  /** The share of events kept, 0–1 (default 1). Sampling is per event; exceptions, sessions and identify are never sampled. */
  sampleRate?: number;
  /** Browser: a page view at init and on every history change (pushState, replaceState, popstate) to a new URL. Default false. */
  autoPageViews?: boolean;
  /** Browser: keep the query string in page URLs and referrers (default false: it often holds tokens and e-mail addresses). */
  pageQueryString?: boolean;
  /** The durable queue. Defaults: a directory of append-only files (Node), IndexedDB (browser). */
  storage?: QueueStorage | 'memory';
  /** Flush when this many events are queued (default 20). */
  flushAt?: number;
  /** Flush at least this often (default 10 000 ms). */
  flushIntervalMs?: number;
  /** At most 1000 (the server's limit; default 1000). */
  maxBatchEvents?: number;
  /** Default 1 MiB, the server's limit. A 413 halves the batch whatever this says. */
  maxBatchBytes?: number;
  /** Queue bounds; past them the oldest records are dropped and counted (defaults 10 000 and 5 MiB). */
  maxQueueRecords?: number;
  maxQueueBytes?: number;
  /** Backoff for 5xx and network errors: full jitter between 0 and min(max, base·2^attempt). */
  retry?: { baseDelayMs?: number; maxDelayMs?: number; maxRetryAfterMs?: number };
  /** Backoff of the probes while billing blocks ingestion (402). */
  billingProbe?: { baseDelayMs?: number; maxDelayMs?: number };
  requestTimeoutMs?: number;
  /** Start a session at init and end it at shutdown (default true). */
  autoSession?: boolean;
  /** Inactivity after which the next activity starts a new session; 0 = never (default: Node 0, browser 30 min). */
  sessionTimeoutMs?: number;
  maxBreadcrumbs?: number;
  /** Report uncaught errors as exceptions (default true). */
  captureUncaught?: boolean;
  /** Node: end the session and flush on exit. Browser: flush on pagehide. Default true. */
  handleExit?: boolean;
  schemaVersion?: string;
  /** Extra fields for X-Environment-Data and environment_context. */
  environment?: Record<string, unknown>;
  fetch?: typeof fetch;
  logger?: Logger | false;
  onError?: (issue: TallyIssue) => void;
}

export interface TallyStats {
  /** Records waiting in the queue (events, sessions, exceptions, identify). */
  queued: number;
  queuedBytes: number;
  /** Events the server accepted (duplicates included: a retry of a stored event counts once). */
  accepted: number;
  duplicates: number;
  /** Records the server rejected for good. */
  rejected: number;
  /** Events track() refused locally. */
  refused: number;
  /** Events not queued on purpose: opted out, sampled out, or dropped by beforeSend. */
  filtered: number;
  /** Records dropped because the queue was full (oldest first). */
  dropped: number;
  /** Set while 401/403 has paused sending. */
  paused?: 'unauthorized' | 'forbidden';
  /** True while a 402 has parked the queue. */
  parked: boolean;
  /** When the next attempt may happen (epoch ms), while backing off. */
  nextAttemptAt?: number;
}

export interface FlushResult {
  /** True when nothing is left to send. */
  delivered: boolean;
  remaining: number;
}
