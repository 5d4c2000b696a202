// Debian's Chromium driven by playwright-core, axe-core injected into the page, console errors
// collected, screenshots under test-results/.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// In CI a missing browser is a failure (.ci/run installs it); on a developer's machine, a skip.
export const skip = !existsSync(CHROMIUM) && !process.env.CI ? `no Chromium at ${CHROMIUM} (apt-get install chromium)` : false;
export const RESULTS = join(process.cwd(), 'test-results');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** The console as `npm install` builds it (vite build into console/dist). */
export function buildConsole(): void {
  execFileSync('npm', ['run', '--silent', 'build', '-w', 'console'], { stdio: 'ignore' });
}

export async function launch(): Promise<Browser> {
  mkdirSync(RESULTS, { recursive: true });
  return chromium.launch({
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
}

// The browser logs every 4xx answer as a console error; the console's permission probe (a PATCH
// of a product that does not exist), the report endpoints a server lacks, the plan and
// permission refusals and a wrong key at sign-in answer 4xx on purpose, and the page shows each.
// Anything else (a script error, a 5xx, a 400) is a failure.
const EXPECTED = /Failed to load resource: the server responded with a status of (401|402|403|404)/;

export interface Watched {
  page: Page;
  errors: string[];
}

export async function openPage(browser: Browser, width = 1280): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  const errors: string[] = [];
  page.on('console', (m) => m.type() === 'error' && !EXPECTED.test(m.text()) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

export async function signIn(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.fill('#api-key', key);
  await page.click('button[type=submit]');
  await page.waitForSelector('nav[aria-label=Console]');
}

export interface Violation {
  id: string;
  impact: string;
  help: string;
  nodes: number;
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function axe(page: Page): Promise<Violation[]> {
  // Evaluated over the DevTools protocol: the console's Content-Security-Policy forbids inline scripts.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(readFileSync(AXE, 'utf8'));
  return page.evaluate(async () => {
    const w = window as unknown as {
      axe: { run(ctx: Document, opts: object): Promise<{ violations: { id: string; impact: string; help: string; nodes: unknown[] }[] }> };
    };
    const r = await w.axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }));
  });
}

export async function shot(page: Page, name: string, alsoTo?: string): Promise<void> {
  await page.screenshot({ path: join(RESULTS, `console-${name}.png`), fullPage: true });
  if (alsoTo) await page.screenshot({ path: alsoTo, fullPage: false });
}

export const tmp = () => mkdtempSync(join(tmpdir(), 'tally-console-'));
