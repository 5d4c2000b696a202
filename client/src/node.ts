// Entry point for Node (the "node" export condition): a file-backed queue and exit hooks.
import { TallyClient } from './core/client.js';
import { setDefaultClient } from './core/api.js';
import { nodePlatform, type NodeOptions } from './node/platform.js';

/** Starts the default client (a previous one is shut down) and returns it. */
export function init(options: NodeOptions): TallyClient {
  return setDefaultClient(new TallyClient(options, nodePlatform));
}

/** A client of its own, beside (or instead of) the default one. */
export function createClient(options: NodeOptions): TallyClient {
  return new TallyClient(options, nodePlatform);
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
export { FileStorage, type FileStorageOptions } from './node/file-storage.js';
export type { NodeOptions } from './node/platform.js';
export type * from './core/types.js';
