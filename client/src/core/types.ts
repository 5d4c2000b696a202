// Public types, and the wire shapes of CONTRACT.md. Absent optional fields are omitted, never null.

/** A flat property bag: strings, finite numbers and booleans (SPEC.md: no nesting, at most 20 keys). */
export type Properties = Record<string, string | number | boolean | undefined>;

export type Severity = 'fatal' | 'non_fatal';

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
    | 'storage_error'; // the storage failed; records are kept in memory
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
  /** Overrides the persisted anonymous actor id. */
  actorId?: string;
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
