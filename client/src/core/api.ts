import type { TallyClient } from './client.js';
import type { CallContext, CaptureOptions, FlushResult, IdentifyOptions, PageOptions, Properties, TallyStats, Traits, TrackOptions } from './types.js';

// The module-level API over one default client, for apps that want `init()` once and
// `track()` anywhere. Each function is a separate export, so a bundler keeps only those used.

let instance: TallyClient | undefined;
let warned = false;

/** @internal Makes `client` the default; a previous default is shut down. */
export function setDefaultClient(client: TallyClient): TallyClient {
  const previous = instance;
  instance = client;
  if (previous && previous !== client) void previous.shutdown();
  return client;
}

/** The client init() made, if any. */
export function getClient(): TallyClient | undefined {
  return instance;
}

function client(): TallyClient | undefined {
  if (!instance && !warned) {
    warned = true;
    console.warn('[tally] called before init(); ignored');
  }
  return instance;
}

export function track(category: string, name: string, properties?: Properties, opts?: TrackOptions): string | undefined {
  return client()?.track(category, name, properties, opts);
}

export function page(properties?: Properties, opts?: PageOptions): string | undefined {
  return client()?.page(properties, opts);
}

export function identify(userId: string, traits?: Traits, opts?: IdentifyOptions): void {
  client()?.identify(userId, traits, opts);
}

export function register(properties: Properties): void {
  client()?.register(properties);
}

export function unregister(...keys: string[]): void {
  client()?.unregister(...keys);
}

export function optOut(): void {
  client()?.optOut();
}

export function optIn(): void {
  client()?.optIn();
}

/** Runs `fn` with `context` as the default of every call inside it (Node: across awaits too). Without init(), just runs `fn`. */
export function withScope<T>(context: CallContext, fn: () => T): T {
  const c = client();
  return c ? c.withScope(context, fn) : fn();
}

export function reset(): void {
  client()?.reset();
}

export function setAccount(accountId: string): void {
  client()?.setAccount(accountId);
}

export function clearAccount(): void {
  client()?.clearAccount();
}

export function setLicense(licenseId: string): void {
  client()?.setLicense(licenseId);
}

export function clearLicense(): void {
  client()?.clearLicense();
}

export function startSession(properties?: Properties, opts?: CallContext): string | undefined {
  return client()?.startSession(properties, opts);
}

export function endSession(opts?: { sessionId?: string }): void {
  client()?.endSession(opts);
}

export function captureException(error: unknown, opts?: CaptureOptions): string | undefined {
  return client()?.captureException(error, opts);
}

export function addBreadcrumb(message: string, data?: Record<string, string | number | boolean>): void {
  client()?.addBreadcrumb(message, data);
}

export async function flush(): Promise<FlushResult> {
  return (await client()?.flush()) ?? { delivered: true, remaining: 0 };
}

export async function shutdown(opts?: { timeoutMs?: number }): Promise<FlushResult> {
  const c = instance;
  instance = undefined;
  return (await c?.shutdown(opts)) ?? { delivered: true, remaining: 0 };
}

export function stats(): TallyStats | undefined {
  return instance?.stats();
}
