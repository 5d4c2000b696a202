// Entry point for browsers (the "browser" export condition): IndexedDB (or localStorage) queue,
// sessions that continue across page loads, a keepalive flush when the page goes away.
import { TallyClient } from './core/client.js';
import { setDefaultClient } from './core/api.js';
import type { TallyOptions } from './core/types.js';
import { browserPlatform } from './browser/platform.js';

/** Starts the default client (a previous one is shut down) and returns it. */
export function init(options: TallyOptions): TallyClient {
  return setDefaultClient(new TallyClient(options, browserPlatform));
}

/** A client of its own, beside (or instead of) the default one. */
export function createClient(options: TallyOptions): TallyClient {
  return new TallyClient(options, browserPlatform);
}

export {
  track,
  page,
  identify,
  reset,
  register,
  unregister,
  setAccount,
  clearAccount,
  setLicense,
  clearLicense,
  startSession,
  endSession,
  captureException,
  addBreadcrumb,
  optOut,
  optIn,
  withScope,
  flush,
  shutdown,
  stats,
  getClient,
} from './core/api.js';
export { TallyClient } from './core/client.js';
export { TallyScope } from './core/scope.js';
export { MemoryStorage } from './core/memory-storage.js';
export { IndexedDbStorage } from './browser/indexeddb-storage.js';
export { LocalStorageStorage } from './browser/local-storage.js';
export type * from './core/types.js';
