// The console in Debian's Chromium (playwright-core) against the real Tally server on a real
// store (PGlite, or PostgreSQL with TEST_DATABASE_URL), seeded through the HTTP API. Nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
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
    const groups = await api<{ data: unknown[]; next_cursor: string | null }>(base, t.adminKey, '/v1/exceptions?limit=5');
    const trends = await api<{ series: { total: { events: number } }[] }>(base, t.adminKey, '/v1/reports/trends?range=30d&interval=day');
    const active = await api<{ rolling: { mau: number; dau: number }[] }>(base, t.adminKey, '/v1/reports/active-actors?range=30d');
    const health = await api<{ data: { sessions: number; crashed_sessions: number }[] }>(base, t.adminKey, '/v1/sessions/release-health?range=30d');
    const events = trends.series.reduce((n, s) => n + s.total.events, 0);
    assert.equal(events, SEEDED_EVENTS + Number(process.env.CONSOLE_PERF_EVENTS ?? 0));
    assert.equal(await metric(page, 'products'), '2');
    assert.equal(await metric(page, 'versions'), String(versions.length));
    assert.equal(await metric(page, 'exception-groups'), `${groups.data.length}${groups.next_cursor ? '+' : ''}`);
    assert.equal(await metric(page, 'dead-letters-24h'), '2');
    assert.equal(await metric(page, 'events-30d'), events.toLocaleString('en-US'));
    assert.equal(await metric(page, 'mau'), active.rolling.at(-1)!.mau.toLocaleString('en-US'));
    // The seed's 6 sessions, 2 crashed: 4 / 6 crash-free.
    const sessions = health.data.reduce((n, r) => n + r.sessions, 0);
    const crashed = health.data.reduce((n, r) => n + r.crashed_sessions, 0);
    assert.deepEqual([sessions, crashed], [6, 2]);
    // One decimal at most, as every rate of the console: 66.7 %, not 66.67 %.
    assert.equal(await metric(page, 'crash-free'), `${(Math.round((1 - crashed / sessions) * 1000) / 10).toLocaleString('en-US')} %`);
    assert.equal(await metric(page, 'crash-free'), '66.7 %');
    await page.waitForSelector('text=TypeError');
    // The most active accounts: the five with the most events over the 30 days, most first (the seed gives acme-1 the most).
    const top = await api<{ series: { breakdown_value: string | null; other: boolean; total: { events: number } }[] }>(
      base,
      t.adminKey,
      '/v1/reports/trends?range=30d&interval=month&breakdown=account&limit=5',
    );
    const expected = top.series.filter((s) => !s.other && s.breakdown_value !== null).map((s) => [s.breakdown_value, s.total.events.toLocaleString('en-US')]);
    const shown = await page.$$eval('table[data-table=top-accounts] tbody tr', (rows) =>
      rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)),
    );
    assert.deepEqual(shown, expected);
    assert.equal(shown[0]![0], 'acme-1', JSON.stringify(shown));
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
      problems.push(...(await looks(page)).map((p) => `${href}: ${p}`));
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
    // …and its occurrences, as the API lists them.
    const occurrences = await api<{ data: { exception_id: string }[] }>(base, t.adminKey, `/v1/exceptions/${fp}/occurrences?range=30d&limit=20`);
    await page.waitForSelector('[data-occurrences-ready]');
    assert.deepEqual(
      await page.$$eval('table[data-table=occurrences] [data-id]', (es) => es.map((e) => e.getAttribute('data-id'))),
      occurrences.data.map((o) => o.exception_id),
    );
    assert.equal(occurrences.data.length, 3);
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
    assert.equal(await page.textContent('[data-metric=share-on-latest]'), `${(Math.round(adoption.share_on_latest! * 10) / 10).toLocaleString('en-US')} %`);
    assert.equal(await page.textContent('[data-metric=share-on-latest]'), '33.3 %');
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

  it('trends broken down by name head their columns with the names exactly as sent', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    await page.goto(`${base}/console/#/trends?range=30d&breakdown=name&view=table`);
    await page.waitForSelector('[data-report-ready] table');
    const heads = await page.$$eval('thead th', (ths) => ths.map((th) => th.textContent));
    assert.ok(heads.includes('file_saved'), heads.join(', '));
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('typing into one text filter right after leaving another keeps every keystroke', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    await page.goto(`${base}/console/#/paths`);
    await page.waitForSelector('#f-category');
    await page.click('#f-category');
    await page.keyboard.type('app');
    // No pause: leaving Category commits it (a re-render) while Name is already being typed into.
    await page.click('#f-name');
    await page.keyboard.type('started');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => location.hash.includes('name='));
    assert.match(page.url(), /category=app/);
    assert.match(page.url(), /name=started(&|$)/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("an exception group's occurrences, page by page as the API pages them, the page in the URL; a session links to its events", async () => {
    const own = await createTenant(base, 'business', 'occurrences');
    await api(base, own.adminKey, '/v1/products', 'POST', { slug: 'app', name: 'app' });
    // 25 occurrences of one group, one an hour over the last 25 hours: a page of 20, then 5. Every
    // fifth has a session; the newest one's session also has an event.
    const now = Date.now();
    const session = randomUUID();
    for (let i = 0; i < 25; i++) {
      await api(base, own.ingestKey, '/v1/events/exceptions', 'POST', {
        exception_id: `occ-${String(i).padStart(2, '0')}`,
        exception_type: 'TypeError',
        severity: i % 4 === 0 ? 'fatal' : 'non_fatal',
        message: `cannot read 'id' of undefined (#${i})`,
        stack_trace: 'TypeError: cannot read properties of undefined\n    at load (app/store.ts:4:2)',
        occurred_at: new Date(now - (i + 1) * 3_600_000).toISOString(),
        actor_id: `user-${i % 6}`,
        product: 'app',
        product_version: i < 10 ? '1.1.0' : '1.0.0',
        account_id: `acct-${i % 3}`,
        ...(i % 5 === 0 ? { session_id: i === 0 ? session : randomUUID() } : {}),
        environment_context: { os: 'linux', locale: 'de-DE' },
      });
    }
    const eventId = uuidv7();
    await api(base, own.ingestKey, '/v1/events', 'POST', [
      {
        event_id: eventId,
        category: 'app',
        name: 'opened',
        timestamp: new Date(now - 3_600_000 - 60_000).toISOString(),
        actor_id: 'user-0',
        product: 'app',
        product_version: '1.1.0',
        session_id: session,
      },
    ]);
    const { page, errors } = await openPage(browser);
    await signIn(page, base, own.adminKey);
    await page.goto(`${base}/console/#/exceptions`);
    await page.click('text=TypeError');
    await page.waitForSelector('[data-occurrences-ready]');
    const fp = new URL(page.url().replace('#/', '')).searchParams.get('fingerprint')!;
    type Occ = { exception_id: string; severity: string; account_id?: string | null; session_id: string | null };
    const list = (q: string) => api<{ data: Occ[]; next_cursor: string | null }>(base, own.adminKey, `/v1/exceptions/${fp}/occurrences?range=30d&limit=20${q}`);
    const shown = () => page.$$eval('table[data-table=occurrences] tbody tr', (rs) => rs.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    const ids = () => page.$$eval('table[data-table=occurrences] [data-id]', (es) => es.map((e) => e.getAttribute('data-id')));

    const first = await list('');
    assert.equal(first.data.length, 20);
    assert.deepEqual(
      await ids(),
      first.data.map((o) => o.exception_id),
    );
    // Newest first: occ-00 … occ-19; severity and account as the API has them.
    assert.deepEqual(
      await ids(),
      Array.from({ length: 20 }, (_, i) => `occ-${String(i).padStart(2, '0')}`),
    );
    const rows = await shown();
    assert.deepEqual(
      rows.map((r) => [r[1], r[6]]),
      first.data.map((o) => [o.severity === 'fatal' ? 'fatal' : 'non-fatal', o.account_id]),
    );
    assert.equal(rows[0]![8], 'os: linux, locale: de-DE');
    assert.match((await page.textContent('table[data-table=occurrences] caption'))!, /Occurrences 1–20/);
    await shot(page, 'exception-occurrences');
    // Nine columns of occurrences fit the page; times, versions and ids are not broken over lines.
    assert.deepEqual(await looks(page), []);
    assert.deepEqual(
      // A cell's text more than one line (20 px) high was wrapped.
      await page.$$eval('table[data-table=occurrences] tbody tr', (rs) =>
        rs.flatMap((r) =>
          [0, 2, 3, 6].flatMap((i) => {
            const range = document.createRange();
            range.selectNodeContents(r.children[i]!);
            return range.getBoundingClientRect().height > 30 ? [r.children[i]!.textContent] : [];
          }),
        ),
      ),
      [],
      'time, version, actor and account on one line',
    );
    // The session links and the pager are reached by Tab too.
    const kb = await keyboard(page);
    assert.ok(kb.controls > 25, `${kb.controls} controls`);
    assert.deepEqual([kb.missed, kb.noRing], [[], []]);

    await page.click('[data-pager=older]');
    await page.waitForFunction(() => /occ_page=2/.test(location.hash));
    await page.waitForSelector('[data-occurrences-ready]');
    const second = await list(`&cursor=${first.next_cursor}`);
    assert.deepEqual(
      second.data.map((o) => o.exception_id),
      ['occ-20', 'occ-21', 'occ-22', 'occ-23', 'occ-24'],
    );
    await page.waitForFunction(() => document.querySelectorAll('table[data-table=occurrences] [data-id]').length === 5);
    assert.deepEqual(
      await ids(),
      second.data.map((o) => o.exception_id),
    );
    assert.equal(second.next_cursor, null);
    assert.equal(await page.$('[data-pager=older]'), null);
    assert.match((await page.textContent('table[data-table=occurrences] caption'))!, /Occurrences 21–25/);
    // The page is in the URL: a reload shows it again.
    await page.reload();
    await page.waitForSelector('[data-occurrences-ready]');
    assert.deepEqual(
      await ids(),
      second.data.map((o) => o.exception_id),
    );
    await shot(page, 'exception-occurrences-page-2');
    await page.click('[data-pager=newest]');
    await page.waitForFunction(() => !/occ=/.test(location.hash));
    await page.waitForFunction(() => document.querySelectorAll('table[data-table=occurrences] [data-id]').length === 20);

    // A filter starts the list at the newest again: fatal ones are occ-00, 04, … 24 (7).
    await page.selectOption('#f-severity', 'fatal');
    await page.waitForFunction(() => /severity=fatal/.test(location.hash));
    await page.waitForFunction(() => document.querySelectorAll('table[data-table=occurrences] [data-id]').length === 7);
    const fatal = await list('&severity=fatal');
    assert.deepEqual(
      await ids(),
      fatal.data.map((o) => o.exception_id),
    );
    assert.deepEqual(
      fatal.data.map((o) => o.exception_id),
      ['occ-00', 'occ-04', 'occ-08', 'occ-12', 'occ-16', 'occ-20', 'occ-24'],
    );

    // occ-00's session: its link opens the event explorer on that session's events.
    await page.click(`a[aria-label="Events of session ${session}"]`);
    await page.waitForSelector('[data-report-ready]');
    assert.match(page.url(), new RegExp(`session_id=${session}`));
    const events = await api<{ data: { event_id: string }[] }>(base, own.adminKey, `/v1/events?session_id=${session}&range=30d`);
    assert.deepEqual(
      events.data.map((e) => e.event_id),
      [eventId],
    );
    assert.match((await page.textContent('main table tbody'))!, new RegExp(eventId));
    assert.equal(await page.$$eval('main table tbody tr', (r) => r.length), 1);
    assert.equal(await page.inputValue('#f-session_id'), session);

    // A key without view_accounts sees no account column.
    const readKey = await issueKey(base, own.tenantId, ['read']);
    const ro = await openPage(browser);
    await signIn(ro.page, base, readKey);
    await ro.page.goto(`${base}/console/#/exceptions?fingerprint=${fp}`);
    await ro.page.waitForSelector('[data-occurrences-ready]');
    assert.deepEqual(await ro.page.$$eval('table[data-table=occurrences] th', (ths) => ths.map((th) => th.textContent)), [
      'Time',
      'Severity',
      'Version',
      'Actor',
      'Session',
      'Message',
      'Environment',
    ]);
    assert.deepEqual([...errors, ...ro.errors], []);
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

  it('keyboard navigation reaches every control, with a visible focus indicator, on every page of the navigation', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    const nav = await page.$$eval('nav a', (as) => as.map((a) => a.getAttribute('href')!.replace(/^#\//, '')));
    // The navigation is console/src/pages/index.ts's PAGES; the admin key sees all of them.
    assert.ok(nav.length >= 18, `${nav.length} pages`);
    const groups = await api<{ data: { fingerprint: string; exception_type: string }[] }>(base, t.adminKey, '/v1/exceptions?limit=100');
    const typeError = groups.data.find((g) => g.exception_type === 'TypeError')!.fingerprint;
    // Every page as the navigation opens it, then the views with more controls: a chosen product,
    // a funnel with a breakdown and a drill-down, an exception group with its occurrences, the
    // explorer filtered to a session.
    const views = [
      ...nav,
      'versions?product=app',
      'allowlists?product=app',
      'funnels?steps=app:started,app:opened,editor:file_saved&breakdown=product_version&drill=2:reached',
      `exceptions?fingerprint=${typeError}`,
      'events?session_id=00000000-0000-4000-8000-000000000000',
    ];
    const problems: string[] = [];
    for (const view of views) {
      await page.goto(`${base}/console/#/${view}`);
      await page.waitForSelector(`nav a[href="#/${view.split('?')[0]}"][aria-current=page]`);
      await settled(page);
      if (view.startsWith('exceptions?')) await page.waitForSelector('[data-occurrences-ready]');
      const k = await keyboard(page);
      assert.ok(k.controls > nav.length, `${view}: ${k.controls} controls`);
      assert.deepEqual(k.missed, [], `${view}: controls never focused by Tab`);
      problems.push(...k.noRing.map((w) => `${view}: ${w} shows no focus indicator`));
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(errors, []);
  });
});

/**
 * What a screenshot would show wrong: the page wider than the window (cut at its right edge), a
 * table or chart wider than its frame (columns hidden to scroll to, a label cut), a raw value in a cell (NaN,
 * undefined, true / false, an object's JSON), a percentage in another format than "33.3 %".
 */
async function looks(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const html = document.documentElement;
    if (html.scrollWidth > window.innerWidth) out.push(`the page is ${html.scrollWidth} px wide in a ${window.innerWidth} px window`);
    for (const t of document.querySelectorAll('main .table-wrap'))
      if (t.scrollWidth > t.clientWidth) out.push(`a table is ${t.scrollWidth} px wide in a frame of ${t.clientWidth} px`);
    // A chart drawn wider than its frame's content box has its right edge (the last day's label) cut.
    for (const c of document.querySelectorAll('main .chart'))
      if (c.scrollWidth > c.clientWidth) out.push(`a chart is ${c.scrollWidth} px wide in a frame of ${c.clientWidth} px`);
    for (const td of document.querySelectorAll('main td, main .card-value')) {
      const text = td.textContent!.trim();
      if (/^(NaN|undefined|null|true|false|\[object Object\])$|^[[{]"/.test(text)) out.push(`a cell shows "${text}"`);
      for (const m of text.matchAll(/(\d[\d,.]*)\s*%/g)) if (!/^\d{1,3}(\.\d)? %$/.test(m[0])) out.push(`a percentage "${m[0]}"`);
    }
    return out;
  });
}

/**
 * Tab through the page from its start: every visible control (link, button, input, select, text
 * area, anything with a tabindex ≥ 0) must get focus, each with a focus ring (an outline of 2 px
 * or more, or a box shadow). Returns how many controls there are, those Tab never reached, and
 * those focused without a ring.
 */
async function keyboard(page: Page): Promise<{ controls: number; missed: string[]; noRing: string[] }> {
  await page.$$eval('[data-k]', (els) => els.forEach((e) => delete (e as HTMLElement).dataset.k));
  const controls = await page.$$eval(
    'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex^="-"])',
    (els) =>
      els
        .filter((e) => (e as HTMLElement).offsetParent !== null || getComputedStyle(e).position === 'fixed')
        .map((e, i) => ((e as HTMLElement).dataset.k = String(i))),
  );
  const reached = new Set<string>();
  const noRing: string[] = [];
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  for (let i = 0; i < controls.length + 5; i++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate(() => {
      const e = document.activeElement as HTMLElement | null;
      if (!e?.dataset.k) return null;
      const s = getComputedStyle(e);
      const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== 'none';
      return { k: e.dataset.k, ring, what: `${e.outerHTML.slice(0, 80)} (outline ${s.outlineStyle} ${s.outlineWidth})` };
    });
    if (!at) continue;
    reached.add(at.k);
    if (!at.ring) noRing.push(at.what);
  }
  const missed = await page.$$eval('[data-k]', (els, r) => els.filter((e) => !r.includes((e as HTMLElement).dataset.k!)).map((e) => e.outerHTML.slice(0, 80)), [
    ...reached,
  ]);
  return { controls: controls.length, missed, noRing };
}
