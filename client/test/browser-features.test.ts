// The client's second-round features in a real page: the built bundle in headless Chromium (playwright-core), sending cross-origin to the real Tally server and store; real history, errors, localStorage and IndexedDB; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { buildBrowserBundle } from '../scripts/build.mjs';
import { launchChromium, skipWithoutChromium as skip, startSite, type Site } from './helpers/browser.js';
import { rows, startServer, storedEventIds, tenant, waitFor, type RunningServer } from './helpers/server.js';

const work = mkdtempSync(join(tmpdir(), 'tally-browser-features-'));
let api: RunningServer;
let site: Site;
let browser: BrowserContext;

before(async () => {
  if (skip) return;
  await buildBrowserBundle(join(work, 'tally.js'));
  site = await startSite({ '/tally.js': readFileSync(join(work, 'tally.js')) });
  api = await startServer();
  browser = await launchChromium(work);
});

after(async () => {
  await browser?.close();
  await api?.close();
  site?.close();
  rmSync(work, { recursive: true, force: true });
});

async function openPage(path = '', referer?: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (err) => !/^(thrown|rejected) in the page$/.test(err.message) && console.error('page error:', err));
  await page.goto(site.url + path, referer ? { referer } : {});
  return page;
}

interface ViewRow {
  event_id: string;
  actor_id: string;
  properties: Record<string, string>;
}

async function views(tenantId: string): Promise<ViewRow[]> {
  return rows<ViewRow>(
    api.t.db,
    "SELECT event_id::text AS event_id, actor_id, properties FROM events WHERE tenant_id = $1 AND category = 'page' ORDER BY event_id",
    [tenantId],
  );
}

describe('client in a browser: page views, errors, consent and filters (headless Chromium)', { skip }, () => {
  it('automatic page views on load, pushState and popstate (not on a query-only replaceState), without query strings, with title and referrer', async () => {
    const tn = await tenant(api);
    const page = await openPage('start?token=secret#top', 'https://search.example/results?q=tally');
    await page.evaluate(
      async (a) => {
        const tally = await import('/tally.js' as string);
        const client = tally.init({ apiKey: a.apiKey, endpoint: a.endpoint, product: 'app', productVersion: '2.0.0', autoPageViews: true, flushAt: 1 });
        history.pushState({}, '', '/next?tab=2');
        document.title = 'the next page'; // a router sets the title right after pushState
        await new Promise((r) => setTimeout(r, 20));
        history.replaceState({}, '', '/next?tab=3'); // same page, another query: no view
        await new Promise((r) => setTimeout(r, 20));
        history.pushState({}, '', '/third');
        await new Promise((r) => setTimeout(r, 20));
        history.back(); // popstate: back on /next
        await new Promise((r) => setTimeout(r, 200));
        client.page({ section: 'manual' });
        await client.flush();
      },
      { apiKey: tn.ingestKey, endpoint: api.url },
    );
    const rowsSeen = await views(tn.id);
    const base = site.url.slice(0, -1);
    assert.deepEqual(
      rowsSeen.map((r) => r.properties),
      [
        { url: `${base}/start`, path: '/start', title: 'page /start', referrer: 'https://search.example/results' },
        { url: `${base}/next`, path: '/next', title: 'the next page', referrer: `${base}/start` },
        { url: `${base}/third`, path: '/third', title: 'the next page', referrer: `${base}/next` },
        { url: `${base}/next`, path: '/next', title: 'the next page', referrer: `${base}/third` },
        { url: `${base}/next`, path: '/next', title: 'the next page', referrer: `${base}/next`, section: 'manual' },
      ],
    );
    await page.close();
  });

  it('window.onerror and unhandledrejection are sent as non_fatal exceptions', async () => {
    const tn = await tenant(api);
    const page = await openPage();
    await page.evaluate(
      async (a) => {
        const tally = await import('/tally.js' as string);
        const client = tally.init({ apiKey: a.apiKey, endpoint: a.endpoint, product: 'app', productVersion: '2.0.0' });
        setTimeout(() => {
          throw new RangeError('thrown in the page');
        });
        void Promise.reject(new TypeError('rejected in the page'));
        await new Promise((r) => setTimeout(r, 100));
        await client.flush();
      },
      { apiKey: tn.ingestKey, endpoint: api.url },
    );
    const xs = await rows<{ exception_type: string; message: string; severity: string }>(
      api.t.db,
      'SELECT exception_type, message, severity FROM exceptions WHERE tenant_id = $1 ORDER BY exception_type',
      [tn.id],
    );
    assert.deepEqual(xs, [
      { exception_type: 'RangeError', message: 'thrown in the page', severity: 'non_fatal' },
      { exception_type: 'TypeError', message: 'rejected in the page', severity: 'non_fatal' },
    ]);
    await page.close();
  });

  it('optOut() survives a reload (nothing sent, nothing queued); optIn() sends again', async () => {
    // It ends opted in: the page's origin and product are shared with the other tests.
    const tn = await tenant(api);
    const page = await openPage('consent');
    const init = `tally.init({ apiKey: ${JSON.stringify(tn.ingestKey)}, endpoint: ${JSON.stringify(api.url)}, product: 'app', productVersion: '2.0.0' })`;
    const first = await page.evaluate(`(async () => {
      const tally = await import('/tally.js');
      const client = ${init};
      await client.flush();
      client.track('ui', 'withdrawn-before-sending');
      client.optOut();
      return { after: client.track('ui', 'after') ?? null, queued: client.stats().queued };
    })()`);
    assert.deepEqual(first, { after: null, queued: 1 }, 'only the end of the session whose start was sent');
    await page.reload();
    const second = (await page.evaluate(`(async () => {
      const tally = await import('/tally.js');
      const client = ${init};
      const out = client.optedOut;
      const refused = client.track('ui', 'still-out') ?? null;
      client.optIn();
      const id = client.track('ui', 'consented');
      await client.flush();
      return { out, refused, id, queued: client.stats().queued };
    })()`)) as { out: boolean; refused: null; id: string; queued: number };
    assert.deepEqual({ ...second, id: typeof second.id }, { out: true, refused: null, id: 'string', queued: 0 });
    const names = await rows<{ name: string }>(api.t.db, 'SELECT name FROM events WHERE tenant_id = $1 ORDER BY event_id', [tn.id]);
    assert.deepEqual(await storedEventIds(api.t.db, tn.id), [second.id], JSON.stringify(names));
    await page.close();
  });

  it('register/unregister, timestamp, identify with traits, beforeSend, sampleRate, scope() and debug logging to the console; disabled sends nothing', async () => {
    const tn = await tenant(api);
    const page = await openPage();
    const logs: string[] = [];
    page.on('console', (m) => m.type() === 'debug' && logs.push(m.text()));
    const apiRequests: string[] = [];
    page.on('request', (r) => r.url().startsWith(api.url) && apiRequests.push(r.url()));
    const disabledRequests = await page.evaluate(
      async (a) => {
        const tally = await import('/tally.js' as string);
        const off = tally.createClient({ apiKey: a.apiKey, endpoint: a.endpoint, product: 'app', productVersion: '2.0.0', disabled: true });
        off.track('ui', 'never');
        off.page();
        await off.flush();
        await off.shutdown();
        return off.stats().queued;
      },
      { apiKey: tn.ingestKey, endpoint: api.url },
    );
    assert.equal(disabledRequests, 0);
    assert.deepEqual(apiRequests, [], 'disabled: no request at all');
    const ids = await page.evaluate(
      async (a) => {
        const tally = await import('/tally.js' as string);
        const client = tally.init({
          apiKey: a.apiKey,
          endpoint: a.endpoint,
          product: 'app',
          productVersion: '2.0.0',
          debug: true,
          // A Function, not an arrow: tsx would wrap a named arrow in a helper the page does not have.
          beforeSend: new Function('e', "return e.name === 'drop-me' ? null : { ...e, properties: { ...e.properties, scrubbed: true } }"),
        });
        tally.register({ build: 'b7', temporary: true });
        tally.unregister('temporary');
        const a1 = tally.track('ui', 'kept', { n: 1 }, { timestamp: '2026-01-02T03:04:05Z' });
        const dropped = tally.track('ui', 'drop-me') ?? null;
        const other = client.scope({ actorId: 'support-agent', accountId: 'acme' }).track('ui', 'on-behalf');
        const anonymous = client.actorId;
        tally.identify('browser-user', { plan: 'pro', seats: 2 });
        await client.flush();
        const sampled = tally.createClient({
          apiKey: a.apiKey,
          endpoint: a.endpoint,
          product: 'app',
          productVersion: '2.0.0',
          sampleRate: 0,
          storage: 'memory',
          autoSession: false,
        });
        const none = sampled.track('ui', 'sampled-out') ?? null;
        return { a1, dropped, other, none, actor: anonymous };
      },
      { apiKey: tn.ingestKey, endpoint: api.url },
    );
    assert.equal(ids.dropped, null);
    assert.equal(ids.none, null);
    const stored = await rows<{ event_id: string; actor_id: string; account_id: string | null; occurred_at: Date; properties: Record<string, unknown> }>(
      api.t.db,
      'SELECT event_id::text AS event_id, actor_id, account_id, occurred_at, properties FROM events WHERE tenant_id = $1 ORDER BY event_id',
      [tn.id],
    );
    assert.deepEqual(
      stored.map((r) => [r.event_id, r.actor_id, r.account_id, r.properties]),
      [
        [ids.a1, ids.actor, null, { build: 'b7', n: 1, scrubbed: true }],
        [ids.other, 'support-agent', 'acme', { build: 'b7', scrubbed: true }],
      ],
    );
    assert.equal(stored[0]!.occurred_at.toISOString(), '2026-01-02T03:04:05.000Z');
    const [link] = await rows<{ anonymous_actor_id: string; traits: Record<string, unknown> }>(
      api.t.db,
      'SELECT l.anonymous_actor_id, t.traits FROM actor_links l JOIN actor_traits t ON t.tenant_id = l.tenant_id AND t.actor_id = l.identified_actor_id WHERE l.tenant_id = $1',
      [tn.id],
    );
    assert.deepEqual(link, { anonymous_actor_id: ids.actor, traits: { plan: 'pro', seats: 2 } }, 'identify with traits from the page');
    await waitFor('the debug lines', () => logs.some((l) => l.includes('POST /v1/events')));
    assert.ok(
      logs.some((l) => l.startsWith('[tally] queued event ui/kept')),
      logs.join('\n'),
    );
    assert.ok(
      logs.some((l) => l === '[tally] not queued: event ui/drop-me: beforeSend returned null'),
      logs.join('\n'),
    );
    assert.ok(
      logs.some((l) => /^\[tally\] POST \/v1\/events \(2 event\(s\), with X-Environment-Data\): 200/.test(l)),
      logs.join('\n'),
    );
    await page.close();
  });
});
