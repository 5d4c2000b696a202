// The console in Debian's Chromium (playwright-core) against the real Tally server on a real
// store (PGlite, or PostgreSQL with TEST_DATABASE_URL), seeded through the HTTP API. Nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startServer, type RunningServer } from '../../client/test/helpers/server.js';
import { axe, buildConsole, launch, openPage, RESULTS, shot, signIn, skip } from './helpers/browser.js';
import { api, createTenant, issueKey, SEEDED_EVENTS, seedTenant, type Seeded } from './helpers/seed.js';

const DOCS = join(process.cwd(), 'docs');
let server: RunningServer;
let browser: Browser;
let t: Seeded;
let base: string;

before(async () => {
  if (skip) return;
  buildConsole();
  server = await startServer();
  base = server.url;
  t = await seedTenant(server);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const metric = (page: Page, id: string) => page.textContent(`[data-metric=${id}] .card-value`);
const settled = (page: Page) => page.waitForFunction(() => !document.querySelector('main [role=status]'), undefined, { timeout: 60_000 });

describe('console', { skip, timeout: 600_000 }, () => {
  it('signs in with a key (a wrong one is refused), and the overview shows the API numbers; first-load JS and time to interactive are measured', async () => {
    const { page, errors } = await openPage(browser);
    const js: Promise<number>[] = [];
    page.on('response', (r) => void (r.url().includes('/console/assets/') && r.url().endsWith('.js') && js.push(r.body().then((b) => gzipSync(b).length))));
    await page.goto(`${base}/console/`);
    await page.fill('#api-key', 'tk_live_not-a-key');
    await page.click('button[type=submit]');
    await page.waitForSelector('text=That key was refused');
    await page.fill('#api-key', t.adminKey);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-complete]', { timeout: 120_000 });
    assert.equal(await page.evaluate(() => document.cookie), '');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('tally.console.key')), t.adminKey);
    const firstLoadJs = (await Promise.all(js)).reduce((a, b) => a + b, 0);

    const versions = (await Promise.all(['app', 'web'].map((p) => api<{ data: unknown[] }>(base, t.adminKey, `/v1/products/${p}/versions?limit=500`)))).flatMap(
      (r) => r.data,
    );
    const groups = await api<{ data: unknown[] }>(base, t.adminKey, '/v1/exceptions?limit=5');
    const trends = await api<{ series: { total: { events: number } }[] }>(base, t.adminKey, '/v1/reports/trends?range=30d&interval=day');
    const active = await api<{ rolling: { mau: number; dau: number }[] }>(base, t.adminKey, '/v1/reports/active-actors?range=30d');
    const health = await api<{ data: { sessions: number; crashed_sessions: number }[] }>(base, t.adminKey, '/v1/sessions/release-health?range=30d');
    const events = trends.series.reduce((n, s) => n + s.total.events, 0);
    assert.equal(events, SEEDED_EVENTS + Number(process.env.CONSOLE_PERF_EVENTS ?? 0));
    assert.equal(await metric(page, 'products'), '2');
    assert.equal(await metric(page, 'versions'), String(versions.length));
    assert.equal(await metric(page, 'exception-groups'), String(groups.data.length));
    assert.equal(await metric(page, 'dead-letters-24h'), '2');
    assert.equal(await metric(page, 'events-30d'), events.toLocaleString('en-US'));
    assert.equal(await metric(page, 'mau'), active.rolling.at(-1)!.mau.toLocaleString('en-US'));
    // The seed's 6 sessions, 2 crashed: 4 / 6 crash-free.
    const sessions = health.data.reduce((n, r) => n + r.sessions, 0);
    const crashed = health.data.reduce((n, r) => n + r.crashed_sessions, 0);
    assert.deepEqual([sessions, crashed], [6, 2]);
    assert.equal(await metric(page, 'crash-free'), `${((1 - crashed / sessions) * 100).toFixed(2)} %`);
    await page.waitForSelector('text=TypeError');
    await shot(page, 'overview', join(DOCS, 'console-overview.png'));

    // Time to interactive, cold (new context, no cached assets), straight to the overview.
    const cold = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await cold.addInitScript((key) => sessionStorage.setItem('tally.console.key', key), t.adminKey);
    const p2 = await cold.newPage();
    await p2.goto(`${base}/console/#/overview`);
    // Interactive: the cards, exception groups and dead letters on screen and usable; complete:
    // the event count (raw events, asked last) too.
    await p2.waitForSelector('[data-ready]', { timeout: 120_000 });
    const tti = await p2.evaluate(() => Math.round(performance.now()));
    await p2.waitForSelector('[data-complete]', { timeout: 120_000 });
    const complete = await p2.evaluate(() => Math.round(performance.now()));
    // Where the time went: each API request's end, from navigation start.
    const requests = await p2.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .map((e) => e as PerformanceResourceTiming)
        .filter((e) => e.name.includes('/v1/'))
        .map((e) => `${new URL(e.name).pathname} ${Math.round(e.startTime)}–${Math.round(e.responseEnd)} ms`),
    );
    await cold.close();
    const load = (await import('node:os')).loadavg()[0]!.toFixed(1);
    writeFileSync(
      join(RESULTS, 'console-perf.json'),
      JSON.stringify({ events, first_load_js_gzip_bytes: firstLoadJs, overview_interactive_ms: tti, overview_complete_ms: complete, load_1m: load, requests }) +
        '\n',
    );
    console.log(
      `console: first-load JS ${firstLoadJs} B gzipped, overview interactive in ${tti} ms, complete in ${complete} ms, with ${events} events (load average ${load})`,
    );
    assert.ok(firstLoadJs <= 250 * 1024, `first-load JS ${firstLoadJs} B gzipped`);
    assert.deepEqual(errors, []);
  });

  it('every page renders the API numbers, without console errors or serious axe violations', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    const hrefs = await page.$$eval('nav a', (as) => as.map((a) => a.getAttribute('href')!));
    assert.ok(hrefs.length >= 18, `${hrefs.length} pages`);
    const problems: string[] = [];
    for (const href of hrefs) {
      await page.goto(`${base}/console/${href}`);
      await page.waitForSelector(`nav a[href="${href}"][aria-current=page]`);
      await settled(page);
      for (const v of await axe(page)) problems.push(`${href}: ${v.impact} ${v.id} (${v.help}, ${v.nodes} nodes)`);
      await shot(page, href.replace(/\W+/g, '-').replace(/^-|-$/g, ''));
    }
    assert.deepEqual(problems, []);

    const groups = await api<{ data: { exception_type: string; count: number }[] }>(base, t.adminKey, '/v1/exceptions?limit=100');
    await page.goto(`${base}/console/#/exceptions`);
    await page.waitForSelector('table');
    const shown = await page.$$eval('tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    assert.deepEqual(
      shown.map((r) => [r[0], r[1]]),
      groups.data.map((g) => [g.exception_type, String(g.count)]),
    );
    await page.click('text=TypeError');
    await page.waitForSelector('pre.stack');
    assert.match((await page.textContent('pre.stack'))!, /at exportReport \(app\/export\.ts/);
    assert.match(page.url(), /fingerprint=/);
    // The group's trend: its occurrences in the last 30 days, as the API counts them.
    const fp = new URL(page.url().replace('#/', '')).searchParams.get('fingerprint')!;
    const trend = await api<{ total: { count: number } }>(base, t.adminKey, `/v1/exceptions/${fp}?range=30d&interval=day`);
    await page.waitForSelector('[data-trend-ready]');
    assert.equal(await page.textContent('[data-metric=trend-total]'), trend.total.count.toLocaleString('en-US'));
    assert.equal(trend.total.count, 3);
    await shot(page, 'exception-detail');

    const accounts = await api<{ data: { account_id: string; events: number }[] }>(base, t.adminKey, '/v1/accounts?limit=200');
    await page.goto(`${base}/console/#/accounts`);
    await page.waitForSelector('table');
    const rows = await page.$$eval('tbody tr', (rs) => rs.map((r) => [...r.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent)));
    assert.deepEqual(
      rows,
      accounts.data.map((a) => [a.account_id, a.events.toLocaleString('en-US')]),
    );

    const licenses = await api<{ data: { license_id: string; events: number }[] }>(base, t.adminKey, '/v1/licenses?limit=200');
    await page.goto(`${base}/console/#/licenses`);
    await page.waitForSelector('table');
    assert.deepEqual(
      await page.$$eval('tbody tr', (rs) => rs.map((r) => [...r.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent))),
      licenses.data.map((l) => [l.license_id, l.events.toLocaleString('en-US')]),
    );
    assert.equal(licenses.data.length, 6);

    const appVersions = await api<{ data: { product_version: string; status: string }[] }>(base, t.adminKey, '/v1/products/app/versions?limit=500');
    const adoption = await api<{ share_on_latest: number | null }>(base, t.adminKey, '/v1/reports/versions?product=app&range=30d');
    await page.goto(`${base}/console/#/versions?product=app`);
    await page.waitForSelector('[data-adoption-ready]');
    assert.notEqual(adoption.share_on_latest, null);
    assert.equal(await page.textContent('[data-metric=share-on-latest]'), `${adoption.share_on_latest!.toLocaleString('en-US')} %`);
    await page.waitForSelector('table[data-table=versions]');
    assert.deepEqual(
      await page.$$eval('table[data-table=versions] tbody tr', (rs) => rs.map((r) => [...r.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent))),
      appVersions.data.map((v) => [v.product_version, v.status]),
    );

    await page.goto(`${base}/console/#/dead-letters?range=24h`);
    await page.waitForSelector('table');
    assert.equal(await page.$$eval('tbody tr', (rs) => rs.length), 2);
    assert.match((await page.textContent('tbody'))!, /UNRECOGNIZED_PRODUCT/);
    assert.deepEqual(errors, []);
  });

  it('a manage_products key toggles strict mode, registers and archives a version, edits an allowlist; a read-only key sees them disabled', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    await page.goto(`${base}/console/#/versions?product=app`);
    await page.waitForSelector('#strict-mode');
    assert.equal(await page.isChecked('#strict-mode'), false);
    // The checkbox shows checked at once; what counts is the PATCH it sends, answered.
    const patched = page.waitForResponse((r) => r.request().method() === 'PATCH' && /\/v1\/products\//.test(r.url()));
    await page.click('#strict-mode');
    assert.equal((await patched).status(), 200);
    await page.waitForFunction(() => (document.querySelector('#strict-mode') as HTMLInputElement).checked);
    await page.waitForFunction(() => !document.querySelector('#strict-mode[disabled]'));
    assert.equal((await api<{ strict_versions_enabled: boolean }>(base, t.adminKey, '/v1/products/app')).strict_versions_enabled, true);

    await page.fill('#reg-version', '3.0.0');
    await page.click('button:has-text("Register")');
    await page.waitForSelector('text=Archive 3.0.0');
    await page.click('text=Archive 3.0.0');
    await page.waitForSelector('text=Restore 3.0.0');
    const v = (await api<{ data: { product_version: string; status: string }[] }>(base, t.adminKey, '/v1/products/app/versions?limit=500')).data.find(
      (x) => x.product_version === '3.0.0',
    );
    assert.equal(v?.status, 'archived');
    await shot(page, 'versions-manage');

    await page.goto(`${base}/console/#/allowlists?product=web`);
    await page.fill('#rule-category', 'app');
    await page.fill('#rule-name', 'st*');
    await page.click('button:has-text("Add rule")');
    await page.waitForSelector('text=Remove app/st*');
    await page.click('#allowlist-enabled');
    await page.waitForFunction(() => (document.querySelector('#allowlist-enabled') as HTMLInputElement).checked);
    await page.waitForFunction(() => !document.querySelector('#allowlist-enabled[disabled]'));
    assert.deepEqual(await api(base, t.adminKey, '/v1/products/web/allowlist'), { enabled: true, rules: [{ category: 'app', name: 'st*' }] });
    await shot(page, 'allowlist-manage');
    await api(base, t.adminKey, '/v1/products/web/allowlist', 'PUT', { enabled: false, rules: [] });

    const readKey = await issueKey(base, t.tenantId, ['read']);
    const ro = await openPage(browser);
    await signIn(ro.page, base, readKey);
    await ro.page.goto(`${base}/console/#/versions?product=app`);
    await ro.page.waitForSelector('#strict-mode');
    assert.equal(await ro.page.isDisabled('#strict-mode'), true);
    assert.equal(await ro.page.$('#reg-version'), null);
    assert.equal(await ro.page.$('text=Archive 1.0.0'), null);
    // Without view_accounts: no Accounts or Licenses in the navigation, and the page, reached by its
    // address, says which permission it needs.
    assert.equal(await ro.page.$('nav a[href="#/accounts"]'), null);
    assert.equal(await ro.page.$('nav a[href="#/licenses"]'), null);
    assert.ok(await ro.page.$('nav a[href="#/versions"]'), 'the navigation is there');
    await ro.page.goto(`${base}/console/#/accounts`);
    await ro.page.waitForSelector('text=This key may not see accounts and licenses');
    assert.match((await ro.page.textContent('main'))!, /view_accounts/);
    await shot(ro.page, 'read-only-key');
    await api(base, t.adminKey, '/v1/products/app', 'PATCH', { strict_versions_enabled: false });
    assert.deepEqual([...errors, ...ro.errors], []);
  });

  it('a 402 says which plan unlocks the account views', async () => {
    const starter = await createTenant(base, 'starter', 'small');
    const { page, errors } = await openPage(browser);
    await signIn(page, base, starter.adminKey);
    await page.goto(`${base}/console/#/accounts`);
    await page.waitForSelector('text=Needs another plan');
    assert.match((await page.textContent('main'))!, /Business or Enterprise plan/);
    await page.goto(`${base}/console/#/overview`);
    await page.waitForSelector('text=No products yet');
    assert.match((await page.textContent('main pre'))!, /curl -X POST .*\/v1\/products/);
    await api(base, starter.adminKey, '/v1/products', 'POST', { slug: 'first' });
    await page.reload();
    await page.waitForSelector('text=No events yet');
    assert.match((await page.textContent('main pre'))!, /curl -X POST .*\/v1\/events[\s\S]*"product":"first"/);
    await shot(page, 'plan-and-empty');
    assert.deepEqual(errors, []);
  });

  it('keyboard navigation reaches every control', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    for (const view of [
      'overview',
      'versions?product=app',
      'allowlists?product=app',
      'funnels?steps=app:started,app:opened,editor:file_saved&breakdown=product_version&drill=2:reached',
      'trends',
      'usage',
    ]) {
      await page.goto(`${base}/console/#/${view}`);
      await settled(page);
      const controls = await page.$$eval('a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), [tabindex="0"]', (els) =>
        els.filter((e) => (e as HTMLElement).offsetParent !== null).map((e, i) => ((e as HTMLElement).dataset.k = String(i))),
      );
      const reached = new Set<string>();
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      for (let i = 0; i < controls.length + 5; i++) {
        await page.keyboard.press('Tab');
        const k = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.k);
        if (k) reached.add(k);
      }
      assert.deepEqual(
        controls.filter((k) => !reached.has(k)),
        [],
        `${view}: controls never focused by Tab`,
      );
    }
    assert.deepEqual(errors, []);
  });
});
