import { AsyncLocalStorage } from 'node:async_hooks';
import { homedir, platform, release, arch } from 'node:os';
import { join } from 'node:path';
import type { Platform, TallyClient } from '../core/client.js';
import { MemoryStorage } from '../core/memory-storage.js';
import type { ResolvedOptions } from '../core/options.js';
import type { CallContext, TallyOptions } from '../core/types.js';
import { FileStorage } from './file-storage.js';

export interface NodeOptions extends TallyOptions {
  /** Where the durable queue lives. Default: $TALLY_QUEUE_DIR, else ~/.tally/queue/<product>. */
  queueDir?: string;
}

const OS_NAMES: Record<string, string> = {
  linux: 'Linux',
  darwin: 'macOS',
  win32: 'Windows',
  freebsd: 'FreeBSD',
  openbsd: 'OpenBSD',
  sunos: 'SunOS',
  aix: 'AIX',
  android: 'Android',
};

function environment(): Record<string, unknown> {
  const intl = Intl.DateTimeFormat().resolvedOptions();
  const osName = OS_NAMES[platform()] ?? platform();
  return {
    runtime: `Node.js ${process.versions.node}`,
    runtime_name: 'node',
    runtime_version: process.versions.node,
    os: `${osName} ${release()}`,
    os_name: osName,
    os_version: release(),
    arch: arch(),
    locale: intl.locale,
    timezone: intl.timeZone,
  };
}

/** Node: a file queue, exit and crash hooks, sessions that last as long as the process. */
export const nodePlatform: Platform = {
  sessionTimeoutMs: 0,
  environment,
  // withScope(): the scope follows the request's async calls (awaits, timers, callbacks).
  scopes() {
    const als = new AsyncLocalStorage<CallContext>();
    return { run: (context, fn) => als.run(context, fn), current: () => als.getStore() };
  },
  storage(options, report) {
    const o = options as NodeOptions;
    const dir = o.queueDir ?? process.env.TALLY_QUEUE_DIR ?? join(homedir(), '.tally', 'queue', o.product.replace(/[^A-Za-z0-9._-]/g, '_'));
    try {
      return new FileStorage({ dir });
    } catch (err) {
      report({ code: 'storage_error', message: `cannot use ${dir} for the queue (${String(err)}); keeping it in memory` });
      return new MemoryStorage();
    }
  },
  install(client: TallyClient, o: ResolvedOptions) {
    let crashed = false;
    // The monitor observes an uncaught exception without changing what Node does with it.
    const onUncaught = (err: unknown) => {
      const handled = process.listenerCount('uncaughtException') > 0;
      if (o.captureUncaught) client.captureException(err, { severity: handled ? 'non_fatal' : 'fatal' });
      if (!handled) crashed = true;
    };
    // 'exit' allows only synchronous work: the session end (or, after a crash, the session's
    // last activity) goes to the file queue, and the next start sends it.
    const onExit = () => client.exitNow(crashed);
    // The loop ran dry: the app is done, so there is time for a last flush.
    const onBeforeExit = () => void client.shutdown({ timeoutMs: 2000 });
    process.on('uncaughtExceptionMonitor', onUncaught);
    if (o.handleExit) {
      process.on('exit', onExit);
      process.on('beforeExit', onBeforeExit);
    }
    return () => {
      process.off('uncaughtExceptionMonitor', onUncaught);
      process.off('exit', onExit);
      process.off('beforeExit', onBeforeExit);
    };
  },
};
