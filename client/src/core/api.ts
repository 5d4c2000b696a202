import type { TallyClient } from './client.js';
import type { FlushResult, Severity, TallyStats } from './types.js';

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

export function track(category: string, name: string, properties?: Record<string, string | number | boolean | undefined>): string | undefined {
  return client()?.track(category, name, properties);
}

export function identify(userId: string): void {
  client()?.identify(userId);
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

export function startSession(properties?: Record<string, string | number | boolean | undefined>): string | undefined {
  return client()?.startSession(properties);
}

export function endSession(): void {
  client()?.endSession();
}

export function captureException(error: unknown, opts?: { severity?: Severity }): string | undefined {
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
