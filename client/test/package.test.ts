// The package as a user gets it: `npm pack` (which builds through `prepare`), the tarball installed with npm into a fresh project in a temp directory outside the repository, then imported by plain Node, type-checked by tsc, bundled by esbuild for the browser and run in headless Chromium, each sending to the real Tally server and store. Nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import type { BrowserContext } from 'playwright-core';
import { launchChromium, skipWithoutChromium, startSite, type Site } from './helpers/browser.js';
import { rows, startServer, tenant, type RunningServer } from './helpers/server.js';

const run = promisify(execFile);
const CLIENT = new URL('..', import.meta.url).pathname;
const REPO = new URL('../..', import.meta.url).pathname;
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const work = mkdtempSync(join(tmpdir(), 'tally-packed-'));
const project = join(work, 'consumer');
let tarball: string;
let files: string[];
let api: RunningServer;

before(async () => {
  const packed = await run(NPM, ['pack', '--json', '--pack-destination', work], { cwd: CLIENT, maxBuffer: 16 * 1024 * 1024 });
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [{ filename: string; files: { path: string }[] }];
  tarball = join(work, info.filename);
  files = info.files.map((f) => f.path);
  // A project of its own, outside the repository: nothing resolves to the workspace's copy.
  await run('mkdir', ['-p', project]);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
  await run(NPM, ['install', tarball, '--no-audit', '--no-fund', '--offline', '--loglevel=error'], { cwd: project });
  api = await startServer();
});

after(async () => {
  await api?.close();
  rmSync(work, { recursive: true, force: true });
});

async function storedEvents(tenantId: string) {
  return rows<{ actor_id: string; account_id: string | null; name: string; properties: Record<string, unknown> | null }>(
    api.t.db,
    'SELECT actor_id, account_id, name, properties FROM events WHERE tenant_id = $1 ORDER BY event_id',
    [tenantId],
  );
}

describe('the packed tarball, installed in a fresh project', () => {
  it('holds the built dist, the README and nothing else (no sources, no tests)', () => {
    assert.ok(
      files.includes('dist/node.js') &&
        files.includes('dist/browser.js') &&
        files.includes('dist/node.d.ts') &&
        files.includes('dist/tally.min.js') &&
        files.includes('dist/tally.iife.min.js'),
      files.join(' '),
    );
    assert.deepEqual(
      files.filter((f) => !f.startsWith('dist/')),
      ['README.md', 'package.json'].sort(),
    );
  });

  it('works in plain Node: import from @tally/client and @tally/client/node, server mode, and the events land', async () => {
    const tn = await tenant(api, 'business');
    writeFileSync(
      join(project, 'app.mjs'),
      `import { createClient } from '@tally/client';
import * as node from '@tally/client/node';
const client = createClient({ apiKey: process.env.KEY, endpoint: process.env.ENDPOINT, product: 'app', productVersion: '3.0.0', mode: 'server', storage: 'memory', logger: false });
const request = client.scope({ actorId: 'packed-user', accountId: 'acme' });
const id = request.track('package', 'node', { via: 'tarball' });
request.identify('packed-user', { plan: 'pro' }, { anonymousId: 'packed-anon' });
const result = await client.shutdown();
console.log(JSON.stringify({ id, result, same: node.createClient === createClient, file: import.meta.resolve('@tally/client') }));
`,
    );
    const out = await run(process.execPath, ['app.mjs'], { cwd: project, env: { ...process.env, KEY: tn.ingestKey, ENDPOINT: api.url } });
    const r = JSON.parse(out.stdout) as { id: string; result: { delivered: boolean }; same: boolean; file: string };
    assert.equal(r.result.delivered, true, out.stdout + out.stderr);
    assert.equal(r.same, true, 'the node condition and the ./node subpath are the same module');
    assert.ok(r.file.startsWith(`file://${project}/node_modules/@tally/client/dist/node.js`), r.file);
    assert.deepEqual(await storedEvents(tn.id), [{ actor_id: 'packed-user', account_id: 'acme', name: 'node', properties: { via: 'tarball' } }]);
    const [link] = await rows<{ identified_actor_id: string }>(api.t.db, 'SELECT identified_actor_id FROM actor_links WHERE tenant_id = $1', [tn.id]);
    assert.equal(link!.identified_actor_id, 'packed-user');
  });

  it('ships types that a strict TypeScript project (NodeNext) checks against, and that catch a wrong call', async () => {
    const good = `import { init, track, identify, page, createClient, type TallyOptions, type WireEvent } from '@tally/client';
const options: TallyOptions = { apiKey: 'k', endpoint: 'http://x', product: 'p', productVersion: '1', beforeSend: (e: WireEvent) => e, sampleRate: 0.5 };
init(options);
const id: string | undefined = track('ui', 'click', { n: 1 }, { timestamp: new Date() });
identify('u', { plan: 'pro' });
page();
createClient({ ...options, mode: 'server' }).scope({ actorId: 'a' }).track('ui', 'x');
export { id };
`;
    writeFileSync(join(project, 'good.ts'), good);
    writeFileSync(join(project, 'bad.ts'), `import { track } from '@tally/client';\ntrack('ui', 'click', { nested: { no: true } });\n`);
    const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2022,dom'];
    await run(process.execPath, [tsc, ...flags, 'good.ts'], { cwd: project });
    await assert.rejects(run(process.execPath, [tsc, ...flags, 'bad.ts'], { cwd: project }), (err: { stdout: string }) =>
      /bad\.ts\(2,\d+\): error TS2322/.test(err.stdout),
    );
  });

  describe('in a browser bundle (esbuild) and as a <script> tag, in headless Chromium', { skip: skipWithoutChromium }, () => {
    let site: Site;
    let browser: BrowserContext;
    let bundle: Buffer;
    before(async () => {
      writeFileSync(
        join(project, 'web.mjs'),
        `import { init, track, page, flush, stats } from '@tally/client';
window.runTally = async (cfg) => {
  init({ ...cfg, product: 'app', productVersion: '3.0.0' });
  const id = track('package', 'browser', { via: 'bundle' });
  page();
  await flush();
  return { id, queued: stats().queued };
};
`,
      );
      await esbuild.build({
        absWorkingDir: project,
        entryPoints: ['web.mjs'],
        outfile: join(project, 'out/web.js'),
        bundle: true,
        minify: true,
        format: 'esm',
        platform: 'browser',
        logLevel: 'silent',
      });
      bundle = readFileSync(join(project, 'out/web.js'));
      const iife = readFileSync(join(project, 'node_modules/@tally/client/dist/tally.iife.min.js'));
      site = await startSite({ '/web.js': bundle, '/tally.iife.min.js': iife }, (path) =>
        path === '/script-tag'
          ? '<!doctype html><title>script tag</title><script src="/tally.iife.min.js"></script>'
          : '<!doctype html><title>bundled</title><script type="module" src="/web.js"></script>',
      );
      browser = await launchChromium(work);
    });
    after(async () => {
      await browser?.close();
      site?.close();
    });

    it('a consumer bundle picks the browser build (no Node built-ins) and sends from the page', async (t) => {
      assert.doesNotMatch(bundle.toString(), /node:fs|node:os|AsyncLocalStorage/);
      t.diagnostic(`consumer bundle: ${bundle.length} bytes minified, ${gzipSync(bundle, { level: 9 }).length} gzipped`);
      const tn = await tenant(api);
      const page = await browser.newPage();
      await page.goto(site.url + 'bundled?secret=1');
      await page.waitForFunction(() => typeof (window as unknown as { runTally?: unknown }).runTally === 'function');
      const r = await page.evaluate((cfg) => (window as unknown as { runTally: (c: object) => Promise<{ id: string; queued: number }> }).runTally(cfg), {
        apiKey: tn.ingestKey,
        endpoint: api.url,
      });
      assert.equal(r.queued, 0);
      const stored = await storedEvents(tn.id);
      assert.deepEqual(stored[0], { actor_id: stored[0]!.actor_id, account_id: null, name: 'browser', properties: { via: 'bundle' } });
      assert.deepEqual(stored[1]!.properties, { url: `${site.url}bundled`, path: '/bundled', title: 'bundled' });
      await page.close();
    });

    it('the IIFE build from the package exposes window.Tally for a <script> tag', async () => {
      const tn = await tenant(api);
      const page = await browser.newPage();
      await page.goto(site.url + 'script-tag');
      const queued = await page.evaluate(
        async (cfg) => {
          const Tally = (
            window as unknown as {
              Tally: { init(o: object): void; track(c: string, n: string): string; flush(): Promise<unknown>; stats(): { queued: number } };
            }
          ).Tally;
          Tally.init({ ...cfg, product: 'app', productVersion: '3.0.0' });
          Tally.track('package', 'script-tag');
          await Tally.flush();
          return Tally.stats().queued;
        },
        { apiKey: tn.ingestKey, endpoint: api.url },
      );
      assert.equal(queued, 0);
      assert.deepEqual(
        (await storedEvents(tn.id)).map((e) => e.name),
        ['script-tag'],
      );
      await page.close();
    });

    it('the browser build is at most 15 KB gzipped', (t) => {
      const min = readFileSync(join(project, 'node_modules/@tally/client/dist/tally.min.js'));
      const gz = gzipSync(min, { level: 9 }).length;
      t.diagnostic(`dist/tally.min.js: ${min.length} bytes minified, ${gz} bytes gzipped`);
      assert.ok(gz <= 15_000, `${gz} bytes gzipped`);
    });
  });
});
