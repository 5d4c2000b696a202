import { checkText, LIMITS } from './validate.js';
import type { Logger, TallyIssue, TallyOptions, WireEvent } from './types.js';

// Defaults, and the checks that catch a misconfigured init() at once (a thrown TypeError is a
// programming error; everything that can go wrong later is reported, never thrown).

export interface ResolvedOptions {
  mode: 'client' | 'server';
  disabled: boolean;
  /** Set when `debug` is on. */
  debug: ((message: string, detail?: unknown) => void) | undefined;
  beforeSend: ((event: WireEvent) => WireEvent | null | undefined) | undefined;
  sampleRate: number;
  optOutByDefault: boolean;
  autoPageViews: boolean;
  pageQueryString: boolean;
  apiKey: string;
  endpoint: string;
  product: string;
  productVersion: string;
  flushAt: number;
  flushIntervalMs: number;
  maxBatchEvents: number;
  maxBatchBytes: number;
  maxQueueRecords: number;
  maxQueueBytes: number;
  retry: { baseDelayMs: number; maxDelayMs: number; maxRetryAfterMs: number };
  billingProbe: { baseDelayMs: number; maxDelayMs: number };
  requestTimeoutMs: number;
  autoSession: boolean;
  sessionTimeoutMs: number;
  maxBreadcrumbs: number;
  captureUncaught: boolean;
  handleExit: boolean;
  schemaVersion: string | undefined;
  fetch: typeof fetch;
  logger: Logger | undefined;
  onError: ((issue: TallyIssue) => void) | undefined;
}

function positive(name: string, v: number | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new TypeError(`tally: ${name} must be a non-negative number`);
  return Math.min(v, max);
}

function required(name: string, v: unknown, max: number): string {
  const bad = checkText(name, v, max);
  if (bad) throw new TypeError(`tally: ${bad}`);
  return v as string;
}

export function resolveOptions(o: TallyOptions, defaults: { sessionTimeoutMs: number }): ResolvedOptions {
  if (!o || typeof o !== 'object') throw new TypeError('tally: init() needs an options object');
  const endpoint = required('endpoint', o.endpoint, 2048).replace(/\/+$/, '');
  try {
    new URL(endpoint);
  } catch {
    throw new TypeError(`tally: endpoint "${endpoint}" is not an absolute URL`);
  }
  const custom = o.fetch;
  if (typeof (custom ?? globalThis.fetch) !== 'function') throw new TypeError('tally: no fetch in this runtime; pass options.fetch');
  // Called as a plain function: a browser's fetch called as a method of another object throws "Illegal invocation".
  const fetchFn: typeof fetch = custom ? (input, init) => custom(input, init) : (input, init) => globalThis.fetch(input, init);
  if (o.mode !== undefined && o.mode !== 'client' && o.mode !== 'server') throw new TypeError(`tally: mode must be 'client' or 'server'`);
  const server = o.mode === 'server';
  const sampleRate = o.sampleRate ?? 1;
  if (typeof sampleRate !== 'number' || !(sampleRate >= 0 && sampleRate <= 1)) throw new TypeError('tally: sampleRate must be a number from 0 to 1');
  if (o.beforeSend !== undefined && typeof o.beforeSend !== 'function') throw new TypeError('tally: beforeSend must be a function');
  const logger =
    o.logger === false
      ? undefined
      : (o.logger ?? { warn: (m: string, d?: unknown) => (d === undefined ? console.warn(`[tally] ${m}`) : console.warn(`[tally] ${m}`, d)) });
  const debug = o.debug
    ? logger?.debug
      ? (m: string, d?: unknown) => logger.debug!(m, d)
      : (m: string, d?: unknown) => (d === undefined ? console.debug(`[tally] ${m}`) : console.debug(`[tally] ${m}`, d))
    : undefined;
  return {
    mode: server ? 'server' : 'client',
    disabled: o.disabled === true,
    debug,
    beforeSend: o.beforeSend,
    sampleRate,
    optOutByDefault: o.optOutByDefault === true,
    autoPageViews: o.autoPageViews === true,
    pageQueryString: o.pageQueryString === true,
    apiKey: required('apiKey', o.apiKey, 1024),
    endpoint,
    product: required('product', o.product, LIMITS.product),
    productVersion: required('productVersion', o.productVersion, LIMITS.productVersion),
    flushAt: Math.max(1, positive('flushAt', o.flushAt, 20)),
    flushIntervalMs: Math.max(10, positive('flushIntervalMs', o.flushIntervalMs, 10_000)),
    maxBatchEvents: Math.max(1, positive('maxBatchEvents', o.maxBatchEvents, LIMITS.batchEvents, LIMITS.batchEvents)),
    maxBatchBytes: Math.max(LIMITS.eventBytes + 2, positive('maxBatchBytes', o.maxBatchBytes, LIMITS.batchBytes)),
    maxQueueRecords: Math.max(1, positive('maxQueueRecords', o.maxQueueRecords, 10_000)),
    maxQueueBytes: Math.max(64 * 1024, positive('maxQueueBytes', o.maxQueueBytes, 5 * 1024 * 1024)),
    retry: {
      baseDelayMs: positive('retry.baseDelayMs', o.retry?.baseDelayMs, 1000),
      maxDelayMs: positive('retry.maxDelayMs', o.retry?.maxDelayMs, 60_000),
      maxRetryAfterMs: positive('retry.maxRetryAfterMs', o.retry?.maxRetryAfterMs, 300_000),
    },
    billingProbe: {
      baseDelayMs: positive('billingProbe.baseDelayMs', o.billingProbe?.baseDelayMs, 30_000),
      maxDelayMs: positive('billingProbe.maxDelayMs', o.billingProbe?.maxDelayMs, 3_600_000),
    },
    requestTimeoutMs: Math.max(100, positive('requestTimeoutMs', o.requestTimeoutMs, 30_000)),
    autoSession: o.autoSession ?? !server,
    sessionTimeoutMs: positive('sessionTimeoutMs', o.sessionTimeoutMs, defaults.sessionTimeoutMs),
    maxBreadcrumbs: positive('maxBreadcrumbs', o.maxBreadcrumbs, 30, 100),
    captureUncaught: o.captureUncaught ?? !server,
    handleExit: o.handleExit ?? true,
    schemaVersion: o.schemaVersion,
    fetch: fetchFn,
    logger,
    onError: o.onError,
  };
}
