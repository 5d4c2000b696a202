// The console's report pages in Debian's Chromium (playwright-core) against the real Tally server
// on a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL), seeded through the HTTP API.
// Nothing faked: each page's numbers are compared with the same question asked of the API.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startServer, type RunningServer } from '../../client/test/helpers/server.js';
import { buildConsole, launch, openPage, shot, signIn, skip } from './helpers/browser.js';
import { api, SEEDED_EVENTS, seedTenant, type Seeded } from './helpers/seed.js';

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

const n = (v: number) => v.toLocaleString('en-US');
/** Every rate on every page, one way: at most one decimal, a space, "%" (console/src/data.ts's pct). */
const pct = (ratio: number) => `${n(Math.round(ratio * 1000) / 10)} %`;
/** The same for the percentages the API gives 0–100 (release health, environment, versions). */
const pct100 = (v: number | null) => (v === null ? '—' : `${n(Math.round(v * 10) / 10)} %`);
const PERCENT = /^\d{1,3}(\.\d)? %$/;
const get = <T>(path: string) => api<T>(base, t.adminKey, path);
const post = <T>(path: string, body: unknown) => api<T>(base, t.adminKey, path, 'POST', body);

/** A table's header cells and body rows, as text. */
async function table(page: Page, selector = 'main table'): Promise<{ head: string[]; rows: string[][] }> {
  return page.$eval(selector, (el) => ({
    head: [...el.querySelectorAll('thead th')].map((th) => th.textContent!.trim()),
    rows: [...el.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim())),
  }));
}
/** The named columns of a table, row by row. */
async function columns(page: Page, names: string[], selector?: string): Promise<string[][]> {
  const { head, rows } = await table(page, selector);
  const idx = names.map((c) => head.indexOf(c));
  assert.ok(!idx.includes(-1), `columns ${names.join(', ')} in ${head.join(', ')}`);
  return rows.map((r) => idx.map((i) => r[i]!));
}
const card = (page: Page, id: string) => page.textContent(`[data-metric=${id}] .card-value`);

/** Every text of the page's tables with a "%" in it, each to be one formatted percentage. */
const percents = (page: Page) =>
  page.$$eval('main td, main .card-value, main strong', (els) => els.map((e) => e.textContent!.trim()).filter((t) => /%$/.test(t) && !/\(/.test(t)));

/** The page is not cut at its right edge, and no table is wider than its frame (nothing hidden to scroll to). */
async function fits(page: Page, what: string): Promise<void> {
  const w = await page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    tables: [...document.querySelectorAll('main .table-wrap')].map((t) => [t.scrollWidth, t.clientWidth]),
  }));
  assert.ok(w.page <= w.viewport, `${what}: the page is ${w.page} px wide in a ${w.viewport} px window`);
  for (const [scroll, client] of w.tables) assert.ok(scroll! <= client!, `${what}: a table ${scroll} px wide in a frame of ${client} px`);
}

async function open(page: Page, view: string, ready = '[data-report-ready]'): Promise<void> {
  await page.goto(`${base}/console/#/${view}`);
  await page.waitForSelector(ready);
}

interface Step {
  step: number;
  count: number;
  dropped: number;
  conversion_from_first: number;
}
interface Funnel {
  entered: number;
  converted: number;
  conversion_rate: number;
  steps: Step[];
  breakdown: { value: string | null; steps: Step[] }[] | null;
}

describe('console report pages', { skip, timeout: 600_000 }, () => {
  it('trends, active actors, retention, paths, sessions, release health, environment, event explorer and usage show the API numbers', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);

    // Trends: per day, events and actors; the Events card is the series total.
    const tr = await get<{ series: { total: { events: number }; data: { date: string; events: number; actors: number }[] }[] }>(
      '/v1/reports/trends?range=7d&interval=day',
    );
    await open(page, 'trends?range=7d&interval=day&view=table');
    assert.deepEqual(
      await columns(page, ['date', 'events', 'actors']),
      tr.series[0]!.data.map((d) => [d.date, n(d.events), n(d.actors)]),
    );
    assert.equal(await card(page, 'events'), n(tr.series[0]!.total.events));
    // The seed goes back up to 6 days and 4 hours: all of it is in 8 local days (7 from today's
    // midnight back would miss the oldest between 00:00 and 04:00 UTC).
    const wide = await get<{ series: { total: { events: number } }[] }>('/v1/reports/trends?range=8d&interval=day');
    assert.ok(wide.series[0]!.total.events >= SEEDED_EVENTS, 'the seeded events are in the last 8 days');
    assert.ok(tr.series[0]!.total.events > 0);
    // With a breakdown by version: a column per value.
    const bv = await get<{ series: { breakdown_value: string | null; data: { events: number }[] }[] }>(
      '/v1/reports/trends?range=7d&interval=day&breakdown=version',
    );
    await open(page, 'trends?range=7d&interval=day&breakdown=version&view=table');
    const values = bv.series.map((s) => s.breakdown_value!);
    assert.deepEqual(values.toSorted(), ['1.0.0', '1.1.0', '2.0.0']);
    assert.deepEqual(
      await columns(page, values),
      bv.series[0]!.data.map((_, i) => bv.series.map((s) => n(s.data[i]!.events))),
    );
    await shot(page, 'trends-breakdown');
    // The top 3 licenses and the rest: the API's "other" series is the column "(other)", never a
    // column "other" of true / false.
    const top3 = await get<{ series: { breakdown_value: string | null; other: boolean; data: { events: number }[] }[] }>(
      '/v1/reports/trends?range=7d&interval=day&breakdown=license&limit=3',
    );
    assert.deepEqual(
      top3.series.map((s) => s.other),
      [false, false, false, true],
    );
    await open(page, 'trends?range=7d&interval=day&breakdown=license&limit=3&view=table');
    const names = top3.series.map((s) => (s.other ? '(other)' : s.breakdown_value!));
    assert.deepEqual((await table(page)).head, ['date', ...names]);
    assert.deepEqual(
      await columns(page, names),
      top3.series[0]!.data.map((_, i) => top3.series.map((s) => n(s.data[i]!.events))),
    );
    assert.equal(await page.inputValue('#f-limit'), '3');

    // Active actors: per day, and DAU / WAU / MAU of the last day.
    const ac = await get<{ data: { date: string; active: number }[]; rolling: { dau: number; wau: number; mau: number }[] }>(
      '/v1/reports/active-actors?range=7d&interval=day',
    );
    await open(page, 'active?range=7d&view=table');
    assert.deepEqual(
      await columns(page, ['date', 'active']),
      ac.data.map((d) => [d.date, n(d.active)]),
    );
    const last = ac.rolling.at(-1)!;
    assert.deepEqual([await card(page, 'dau'), await card(page, 'wau'), await card(page, 'mau')], [n(last.dau), n(last.wau), n(last.mau)]);
    assert.equal(last.mau, 15); // 12 seeded actors and 3 dropouts

    // Retention by day: cohort size and each period's percentage.
    const re = await post<{ cohorts: { cohort_start: string; size: number; values: { percentage: number }[] }[] }>('/v1/retention', {
      range: '7d',
      period: 'day',
    });
    await open(page, 'retention?range=7d&interval=day');
    const { rows: rrows } = await table(page);
    assert.deepEqual(
      rrows,
      re.cohorts.map((c) => [
        c.cohort_start.slice(0, 10),
        n(c.size),
        ...c.values.map((v) => (c.size === 0 ? '—' : `${n(Math.round(v.percentage * 1000) / 10)} %`)),
        ...Array.from({ length: re.cohorts[0]!.values.length - c.values.length }, () => ''),
      ]),
    );
    assert.ok(
      re.cohorts.some((c) => c.size > 0),
      'a cohort with actors',
    );
    for (const t of await percents(page)) assert.match(t, PERCENT);
    await shot(page, 'retention', join(DOCS, 'console-retention.png'));

    // Paths after app:started.
    const pa = await get<{ paths: { events: { category: string; name: string }[]; occurrences: number; actors: number }[] }>(
      '/v1/paths?range=30d&category=app&name=started',
    );
    await open(page, 'paths?range=30d&category=app&name=started');
    assert.ok(pa.paths.length > 0);
    assert.deepEqual(
      await columns(page, ['path', 'occurrences', 'actors']),
      pa.paths.map((p) => [p.events.map((e) => `${e.category}/${e.name}`).join(' → ') || '(nothing after)', n(p.occurrences), n(p.actors)]),
    );

    // Sessions: the count, crashed, per day.
    const ss = await get<{ sessions: number; statuses: { crashed: number }; data: { date: string; sessions: number }[] }>(
      '/v1/sessions/stats?range=7d&interval=day',
    );
    await open(page, 'sessions?range=7d&view=table');
    assert.deepEqual([await card(page, 'sessions'), await card(page, 'crashed')], [n(ss.sessions), n(ss.statuses.crashed)]);
    assert.deepEqual([ss.sessions, ss.statuses.crashed], [6, 2]);
    assert.deepEqual(
      await columns(page, ['date', 'sessions']),
      ss.data.map((d) => [d.date, n(d.sessions)]),
    );

    // Release health per version: grouped columns (sessions by status, actors, crash-free,
    // adoption) that fit the page; the rates as percentages of one decimal at most.
    type Health = {
      product: string;
      product_version: string;
      sessions: number;
      actors: number;
      crashed_sessions: number;
      errored_sessions: number;
      abnormal_sessions: number;
      healthy_sessions: number;
      crashed_actors: number;
      crash_free_sessions: number | null;
      crash_free_actors: number | null;
      adoption: { sessions: number | null; actors: number | null };
    };
    const rh = await get<{ data: Health[] }>('/v1/sessions/release-health?range=30d');
    await open(page, 'release-health?range=30d');
    const { head: rhead, rows: rhrows } = await table(page, 'table[data-table=release-health]');
    assert.deepEqual(rhead, [
      'Product',
      'Version',
      'Sessions',
      'Actors',
      'Crash-free',
      'Adoption',
      'total',
      'crashed',
      'errored',
      'abnormal',
      'healthy',
      'total',
      'crashed',
      'sessions',
      'actors',
      'sessions',
      'actors',
    ]);
    assert.deepEqual(
      rhrows,
      rh.data.map((r) => [
        r.product,
        r.product_version,
        ...[r.sessions, r.crashed_sessions, r.errored_sessions, r.abnormal_sessions, r.healthy_sessions, r.actors, r.crashed_actors].map(n),
        pct100(r.crash_free_sessions),
        pct100(r.crash_free_actors),
        pct100(r.adoption.sessions),
        pct100(r.adoption.actors),
      ]),
    );
    // The seed's three versions, a third of the sessions each: 33.3 %, never 33.333 %.
    assert.deepEqual(
      rhrows.map((r) => r.slice(-2)),
      [
        ['33.3 %', '33.3 %'],
        ['33.3 %', '33.3 %'],
        ['33.3 %', '33.3 %'],
      ],
    );
    for (const t of await percents(page)) assert.match(t, PERCENT);
    await fits(page, 'release health');
    await shot(page, 'release-health-fits');

    // Environment: actors per OS; the API's "other" flag is no column: the rest past the top
    // values is the value "(other)", actors who sent none "(not sent)"; the share a percentage.
    const en = await get<{ data: { value: string | null; other: boolean; actors: number; sessions: number; actor_share: number }[] }>(
      '/v1/environment/os?range=30d',
    );
    await open(page, 'environment?range=30d');
    const { head: ehead } = await table(page);
    assert.deepEqual(ehead, ['operating system', 'actors', 'sessions', 'actor share']);
    assert.deepEqual(
      await columns(page, ['operating system', 'actors', 'sessions', 'actor share']),
      en.data.map((r) => [r.other ? '(other)' : (r.value ?? '(not sent)'), n(r.actors), n(r.sessions), pct100(r.actor_share)]),
    );
    // 6 actors sent an environment with their session; the other 9 active actors sent none (null).
    assert.deepEqual(en.data.map((r) => `${r.value}: ${r.actors}`).toSorted(), ['Windows 11 23H2: 3', 'macOS 14.5: 3', 'null: 9']);
    assert.doesNotMatch((await page.textContent('main table'))!, /\b(true|false)\b/);

    // Event explorer: the same events, newest first.
    const ev = await get<{ data: { event_id: string; occurred_at: string }[] }>('/v1/events?range=7d&category=editor&name=file_saved');
    await open(page, 'events?range=7d&category=editor&name=file_saved');
    assert.deepEqual(
      (await columns(page, ['event id'])).map((r) => r[0]),
      ev.data.map((e) => e.event_id),
    );
    assert.equal(ev.data.length, 50);
    // Times to the second in UTC, no ISO "T…Z"; the table fits the page (ids and times on one line).
    assert.deepEqual(
      (await columns(page, ['time (UTC)'])).map((r) => r[0]),
      ev.data.map((e) => e.occurred_at.replace('T', ' ').slice(0, 19)),
    );
    await fits(page, 'event explorer');
    assert.equal(
      await page.$$eval('main tbody tr', (rs) => rs.filter((r) => r.getBoundingClientRect().height > 40).length),
      0,
      'every row of the explorer is one line',
    );

    // Usage and plan: this cycle's events against the allotment, and what happens next.
    const us = await get<{ usage: { events: number; allotment: number } }>('/v1/usage');
    await open(page, 'usage');
    assert.deepEqual([await card(page, 'usage-events'), await card(page, 'usage-allotment')], [n(us.usage.events), n(us.usage.allotment)]);
    assert.ok(us.usage.events >= SEEDED_EVENTS);
    assert.match((await page.textContent('main'))!, /billed as overage/);
    // A share below 0.05 % is not shown as none; the cycle's dates are never cut at a hyphen.
    const meter = (await page.textContent('label[for=usage-meter]'))!;
    const share = (us.usage.events / us.usage.allotment) * 100;
    assert.ok(share > 0 && share < 0.05, `${share}`);
    assert.match(meter, /\(< 0\.1 %\)$/);
    assert.equal(await page.locator('[data-metric=usage-events] .card-hint .nw').count(), 2);
    await shot(page, 'usage');
    assert.deepEqual(errors, []);
  });

  it('funnels: build a 3-step funnel, change the range, add a breakdown, drill down into a step (paged, CSV, saved as a segment); numbers equal the API', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, base, t.adminKey);
    await page.goto(`${base}/console/#/funnels`);
    for (const step of ['app:opened', 'editor:file_saved']) {
      await page.fill('#new-step', step);
      await page.click('button:has-text("Add step")');
    }
    await page.waitForFunction(() => document.querySelectorAll('ol.steps > li').length === 4);
    await page.waitForSelector('[data-funnel-ready]');
    const steps = [
      { category: 'app', name: 'started' },
      { category: 'app', name: 'opened' },
      { category: 'editor', name: 'file_saved' },
    ];
    const stepCells = (f: Funnel) => f.steps.map((s) => [String(s.step), n(s.count), pct(s.conversion_from_first), s.step === 1 ? '—' : n(s.dropped)]);
    const f30 = await post<Funnel>('/v1/funnels', { range: '30d', steps });
    assert.deepEqual(await columns(page, ['Step', 'Reached', 'From first', 'Dropped'], 'table[data-table=funnel-steps]'), stepCells(f30));
    assert.ok(f30.converted > 0 && f30.converted < f30.entered, `a funnel some convert through and some drop out of: ${f30.converted} of ${f30.entered}`);

    await page.selectOption('#f-range', '7d');
    const f7 = await post<Funnel>('/v1/funnels', { range: '7d', steps });
    await page.waitForFunction(() => location.hash.includes('range=7d'));
    await page.waitForSelector('[data-funnel-ready]');
    assert.deepEqual(await columns(page, ['Step', 'Reached', 'From first', 'Dropped'], 'table[data-table=funnel-steps]'), stepCells(f7));

    await page.selectOption('#f-breakdown', 'product_version');
    await page.waitForSelector('table[data-table=funnel-breakdown]');
    const fb = await post<Funnel>('/v1/funnels', { range: '7d', steps, breakdown: 'product_version' });
    assert.ok(fb.breakdown && fb.breakdown.length >= 2, 'two or more versions');
    const { rows: brows } = await table(page, 'table[data-table=funnel-breakdown]');
    assert.deepEqual(
      brows,
      fb.breakdown!.map((g) => [g.value ?? '(none)', ...g.steps.map((s) => `${n(s.count)} (${pct(s.conversion_from_first)})`)]),
    );
    // Each breakdown value is drawn: one bar per value under every step.
    assert.equal(await page.$$eval('.funnel-step', (els) => els[0]!.querySelectorAll('.bar').length), fb.breakdown!.length);
    const url = new URL(page.url().replace('#/', ''));
    assert.equal(url.searchParams.get('steps'), 'app:started,app:opened,editor:file_saved');
    assert.equal(url.searchParams.get('range'), '7d');
    assert.equal(url.searchParams.get('breakdown'), 'product_version');
    await page.reload();
    await page.waitForSelector('table[data-table=funnel-breakdown]');
    // Every rate of the page in one format: "26.7 %" in the step table as in the bars.
    const rates = await page.$$eval('main td, .bar-value, .summary strong', (els) =>
      els.flatMap((e) => [...e.textContent!.matchAll(/[\d.,]+\s*%/g)].map((m) => m[0])),
    );
    assert.ok(rates.length > 20, rates.join(' | '));
    for (const r of rates) assert.match(r, PERCENT);
    await shot(page, 'funnel', join(DOCS, 'console-funnel.png'));

    // Conversion over time: a line, not steps.
    await page.selectOption('#f-view', 'trend');
    await page.waitForSelector('.chart canvas');
    await page.selectOption('#f-view', 'steps');

    // Drill-down: who dropped before step 3 (first value of the breakdown), compared with the API.
    await page.selectOption('#f-breakdown', '');
    await page.waitForFunction(() => !document.querySelector('table[data-table=funnel-breakdown]'));
    await page.click('table[data-table=funnel-steps] tbody tr:nth-child(3) td:nth-child(6) a');
    await page.waitForSelector('[data-drill-ready]');
    const body = { range: '7d', steps, step: 3, status: 'dropped' };
    const dropped = await post<{ data: { id: string }[]; next_cursor: string | null }>('/v1/funnels/actors', { ...body, limit: 50 });
    assert.deepEqual(
      await page.$$eval('ul.actors li', (lis) => lis.map((li) => li.textContent)),
      dropped.data.map((u) => u.id),
    );
    assert.equal(dropped.data.length, f7.steps[2]!.dropped);
    assert.match(page.url(), /drill=3%3Adropped|drill=3:dropped/);
    // CSV: the whole list.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Download all as CSV")')]);
    const csv = readFileSync((await download.path())!, 'utf8');
    assert.deepEqual(csv.trim().split(/\r?\n/), ['actor_id', ...dropped.data.map((u) => u.id)]);
    // Save as a segment: its actors are the list.
    await page.fill('#segment-name', 'Dropped before saving');
    await page.click('button:has-text("Save as segment")');
    await page.waitForSelector('text=Saved:');
    assert.equal(await page.textContent('[role=status] a'), 'segment “Dropped before saving”');
    const segs = await get<{ data: { id: string; name: string }[] }>('/v1/segments');
    const seg = segs.data.find((s) => s.name === 'Dropped before saving')!;
    assert.ok(seg);
    const members = await get<{ data: { id: string }[] }>(`/v1/segments/${seg.id}/actors`);
    assert.deepEqual(
      members.data.map((m) => m.id),
      dropped.data.map((u) => u.id),
    );
    await shot(page, 'funnel-drill');
    // The segments page lists it.
    await open(page, 'segments');
    assert.deepEqual(
      (await columns(page, ['name'])).map((r) => r[0]),
      segs.data.map((s) => s.name),
    );

    // Paged: reached step 1 in 30 days with pages of 50 would be one page here; the page's
    // next/previous buttons follow the API's cursor (disabled at the ends).
    await page.goto(`${base}/console/#/funnels?steps=app:started,app:opened,editor:file_saved&range=30d&drill=1:reached`);
    await page.waitForSelector('[data-drill-ready]');
    const reached = await post<{ data: { id: string }[]; next_cursor: string | null }>('/v1/funnels/actors', {
      range: '30d',
      steps,
      step: 1,
      status: 'reached',
      limit: 50,
    });
    assert.deepEqual(
      await page.$$eval('ul.actors li', (lis) => lis.map((li) => li.textContent)),
      reached.data.map((u) => u.id),
    );
    assert.equal(await page.isDisabled('button:has-text("Next page")'), reached.next_cursor === null);
    assert.deepEqual(errors, []);
  });
});
