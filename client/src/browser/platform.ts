import type { Platform, TallyClient } from '../core/client.js';
import type { ResolvedOptions } from '../core/options.js';
import { MemoryStorage } from '../core/memory-storage.js';
import { pageUrl } from '../core/page.js';
import { IndexedDbStorage } from './indexeddb-storage.js';
import { LocalStorageStorage, usableLocalStorage } from './local-storage.js';

// What a browser adds: where it runs (for X-Environment-Data), where the queue lives, and the
// page's exit and error events.

const BROWSERS: [RegExp, string][] = [
  [/Edg\/([\d.]+)/, 'Edge'],
  [/OPR\/([\d.]+)/, 'Opera'],
  [/Firefox\/([\d.]+)/, 'Firefox'],
  [/(?:Chrome|CriOS)\/([\d.]+)/, 'Chrome'],
  [/Version\/([\d.]+).*Safari/, 'Safari'],
];
const SYSTEMS: [RegExp, string][] = [
  [/Windows NT ([\d.]+)/, 'Windows'],
  [/(?:iPhone|CPU) OS ([\d_]+)/, 'iOS'],
  [/Mac OS X ([\d_.]+)/, 'macOS'],
  [/Android ([\d.]+)/, 'Android'],
  [/CrOS/, 'ChromeOS'],
  [/Linux/, 'Linux'],
];

function match(ua: string, table: [RegExp, string][]): { name: string; version?: string } | undefined {
  for (const [re, name] of table) {
    const m = re.exec(ua);
    if (m) return { name, ...(m[1] ? { version: m[1].replaceAll('_', '.') } : {}) };
  }
  return undefined;
}

function environment(): Record<string, unknown> {
  const nav = globalThis.navigator;
  const ua = nav?.userAgent ?? '';
  const browser = match(ua, BROWSERS);
  const os = match(ua, SYSTEMS);
  const intl = Intl.DateTimeFormat().resolvedOptions();
  const scr = globalThis.screen;
  return {
    runtime: 'browser',
    ...(browser ? { browser: `${browser.name} ${browser.version ?? ''}`.trim(), browser_name: browser.name, browser_version: browser.version } : {}),
    ...(os ? { os: `${os.name} ${os.version ?? ''}`.trim(), os_name: os.name, os_version: os.version } : {}),
    user_agent: ua,
    locale: nav?.language ?? intl.locale,
    timezone: intl.timeZone,
    ...(scr ? { screen: { width: scr.width, height: scr.height, pixel_ratio: globalThis.devicePixelRatio ?? 1 } } : {}),
    ...(globalThis.innerWidth ? { viewport: { width: globalThis.innerWidth, height: globalThis.innerHeight } } : {}),
  };
}

export const browserPlatform: Platform = {
  sessionTimeoutMs: 30 * 60_000,
  environment,
  page: () => ({ url: location.href, title: document.title, referrer: document.referrer }),
  storage(options) {
    const ns = `tally:${options.product}`;
    if (typeof indexedDB !== 'undefined') return new IndexedDbStorage(ns);
    const ls = usableLocalStorage();
    return ls ? new LocalStorageStorage(ns, ls) : new MemoryStorage();
  },
  install(client: TallyClient, o: ResolvedOptions) {
    const off: (() => void)[] = [];
    const on = <K extends keyof WindowEventMap>(target: Window | Document, type: K | 'visibilitychange', fn: (ev: never) => void) => {
      target.addEventListener(type, fn as EventListener);
      off.push(() => target.removeEventListener(type, fn as EventListener));
    };
    if (typeof window === 'undefined') return () => undefined;
    if (o.handleExit) {
      // The page may never come back: one keepalive request now; everything is on storage anyway.
      on(window, 'pagehide', () => client.pageExit());
      on(document, 'visibilitychange', () => document.visibilityState === 'hidden' && client.pageExit());
    }
    if (o.captureUncaught) {
      // The page survives an uncaught error, so it is reported as non_fatal. A resource that
      // failed to load is an Event, not an ErrorEvent: not an exception.
      on(window, 'error', (ev: ErrorEvent) => ev instanceof ErrorEvent && client.captureException(ev.error ?? ev.message));
      on(window, 'unhandledrejection', (ev: PromiseRejectionEvent) => client.captureException(ev.reason));
    }
    if (o.autoPageViews) {
      // A view at init, and one per history change to another URL. A task later, so that the
      // title a router sets right after pushState is the one sent.
      let last: string | undefined;
      const view = () => {
        const url = pageUrl(location.href, o.pageQueryString);
        if (url === last) return;
        last = url;
        client.page();
      };
      const later = () => void setTimeout(view, 0);
      view();
      for (const name of ['pushState', 'replaceState'] as const) {
        const original = history[name];
        const patched = function (this: History, ...args: Parameters<History['pushState']>) {
          const result = original.apply(this, args);
          later();
          return result;
        };
        history[name] = patched;
        off.push(() => history[name] === patched && (history[name] = original));
      }
      on(window, 'popstate', later);
    }
    return () => off.forEach((f) => f());
  },
};
