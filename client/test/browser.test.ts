// The built browser bundle in a real page, in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core), sending to the real Tally server on another origin, so CORS is
// exercised. Real: browser, IndexedDB, localStorage, fetch, CORS, server, store. Nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { buildBrowserBundle } from '../scripts/build.mjs';
import { rows, sessions, startServer, storedEventIds, tenant, type RunningServer } from './helpers/server.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// In CI a missing browser is a failure (.ci/run installs it); on a developer's machine, a skip.
const skip = !existsSync(CHROMIUM) && !process.env.CI ? `no Chromium at ${CHROMIUM} (apt-get install chromium)` : false;

const work = mkdtempSync(join(tmpdir(), 'tally-browser-'));
let api: RunningServer;
let site: Server;
let siteUrl: string;
let browser: BrowserContext;
let bundleSize: { bytes: number; gzipped: number };

before(async () => {
  if (skip) return;
  bundleSize = await buildBrowserBundle(join(work, 'tally.js'));
  const bundle = await import('node:fs').then((fs) => fs.readFileSync(join(work, 'tally.js')));
  site = createServer((req, res) => {
    if (req.url === '/tally.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>an app</title><p>an app</p>');
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  // The page is served from "localhost", the API from "127.0.0.1": two origins.
  siteUrl = `http://localhost:${(site.address() as { port: number }).port}/`;
  api = await startServer();
  browser = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

after(async () => {
  await browser?.close();
  await api?.close();
  site?.close();
  rmSync(work, { recursive: true, force: true });
});

async function openPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (err) => err.message !== 'uncaught in the page' && console.error('page error:', err));
  await page.goto(siteUrl);
  return page;
}

interface PageRun {
  ids: string[];
  session: string;
  actor: string;
  stats: { queued: number; accepted: number };
}

/** init, track, optionally identify and capture, flush: inside the page, with the bundle. */
function runInPage(page: Page, args: { apiKey: string; endpoint: string; storage?: string; identify?: string; events: number }): Promise<PageRun> {
  return page.evaluate(async (a) => {
    const tally = await import('/tally.js' as string);
    const client = tally.init({
      apiKey: a.apiKey,
      endpoint: a.endpoint,
      product: 'app',
      productVersion: '2.0.0',
      flushAt: 5,
      retry: { baseDelayMs: 50, maxDelayMs: 200 },
      ...(a.storage ? { storage: new tally.LocalStorageStorage(a.storage) } : {}),
    });
    const ids = Array.from({ length: a.events }, (_, i) => client.track('page', 'view', { i, path: location.pathname }));
    if (a.identify) client.identify(a.identify);
    if (a.identify) {
      client.captureException(new TypeError('cannot read properties of undefined'));
      setTimeout(() => {
        throw new RangeError('uncaught in the page');
      });
      await new Promise((r) => setTimeout(r, 50));
    }
    await client.flush();
    return { ids, session: client.sessionId, actor: client.actorId, stats: client.stats() };
  }, args);
}

describe('client in a browser (headless Chromium)', { skip }, () => {
  it('sends events, identify and an exception cross-origin; the server stores them with the browser environment', async () => {
    const tn = await tenant(api);
    const page = await openPage();
    const run = await runInPage(page, { apiKey: tn.ingestKey, endpoint: api.url, identify: 'user-7', events: 12 });
    assert.equal(run.stats.queued, 0, JSON.stringify(run.stats));
    assert.deepEqual((await storedEventIds(api.t.db, tn.id)).sort(), [...run.ids].sort());
    const [env] = await rows<{ data: Record<string, unknown> }>(api.t.db, 'SELECT data FROM environments WHERE tenant_id = $1 LIMIT 1', [tn.id]);
    assert.equal(env!.data.browser_name, 'Chrome');
    assert.equal(env!.data.runtime, 'browser');
    assert.equal(typeof (env!.data.screen as { width: number }).width, 'number');
    const [link] = await rows<{ identified_actor_id: string }>(api.t.db, 'SELECT identified_actor_id FROM actor_links WHERE tenant_id = $1', [tn.id]);
    assert.equal(link!.identified_actor_id, 'user-7');
    const [x, uncaught] = await rows<{ exception_type: string; severity: string; stack_trace: string; breadcrumbs: unknown[] }>(
      api.t.db,
      'SELECT exception_type, severity, stack_trace, breadcrumbs FROM exceptions WHERE tenant_id = $1 ORDER BY occurred_at',
      [tn.id],
    );
    assert.equal(x!.exception_type, 'TypeError');
    assert.match(x!.stack_trace, /^TypeError: cannot read properties of undefined\n\s+at /);
    assert.equal(x!.breadcrumbs.length, 14, 'the session start, 12 events and the identify');
    assert.deepEqual([uncaught!.exception_type, uncaught!.severity], ['RangeError', 'non_fatal'], 'an uncaught error in the page is captured');
    assert.equal((await sessions(api.t.db, tn.id))[0]!.session_id, run.session);
    await page.close();
  });

  for (const storage of ['IndexedDB', 'localStorage'] as const) {
    it(`keeps what could not be sent across page loads (${storage}), and continues the session`, async () => {
      const tn = await tenant(api);
      const page = await openPage();
      const ns = storage === 'localStorage' ? `ls-${tn.id}` : undefined;
      // The API is unreachable for the first page: everything stays queued in the browser.
      const offline = await runInPage(page, { apiKey: tn.ingestKey, endpoint: 'http://127.0.0.1:9', storage: ns!, events: 7 });
      assert.ok(offline.stats.queued >= 7, JSON.stringify(offline.stats));
      await page.reload();
      const online = await runInPage(page, { apiKey: tn.ingestKey, endpoint: api.url, storage: ns!, events: 3 });
      assert.equal(online.stats.queued, 0, JSON.stringify(online.stats));
      assert.deepEqual((await storedEventIds(api.t.db, tn.id)).sort(), [...offline.ids, ...online.ids].sort());
      assert.equal(online.session, offline.session, 'a reload within 30 minutes continues the session');
      assert.equal(online.actor, offline.actor, 'the anonymous id survives the reload');
      await page.close();
    });
  }

  it('events tracked as the page goes away are kept (IndexedDB commits late; the spill in localStorage does not)', async () => {
    const tn = await tenant(api);
    const page = await openPage();
    const reloaded = page.waitForEvent('load');
    await page
      .evaluate(
        async (a) => {
          const tally = await import('/tally.js' as string);
          const client = tally.init({ apiKey: a.apiKey, endpoint: 'http://127.0.0.1:9', product: 'app', productVersion: '2.0.0', flushAt: 1000 });
          const tracked = Array.from({ length: 50 }, (_, i) => client.track('page', 'leaving', { i }) as string);
          sessionStorage.setItem('tracked', JSON.stringify(tracked));
          location.reload(); // no flush, no await: the page goes away with writes in flight
        },
        { apiKey: tn.ingestKey },
      )
      .catch(() => undefined); // the navigation may destroy the context before evaluate returns
    await reloaded;
    const ids = JSON.parse((await page.evaluate(() => sessionStorage.getItem('tracked')))!) as string[];
    assert.equal(ids.length, 50);
    const online = await runInPage(page, { apiKey: tn.ingestKey, endpoint: api.url, events: 0 });
    assert.equal(online.stats.queued, 0, JSON.stringify(online.stats));
    assert.deepEqual((await storedEventIds(api.t.db, tn.id)).sort(), [...ids].sort());
    await page.close();
  });

  it('the bundle is small', (t) => {
    assert.ok(bundleSize.gzipped <= 15_000, `gzipped: ${bundleSize.gzipped} bytes`);
    t.diagnostic(`browser bundle: ${bundleSize.bytes} bytes minified, ${bundleSize.gzipped} bytes gzipped`);
  });
});
