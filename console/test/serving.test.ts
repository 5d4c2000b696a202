// How the server serves the console's files (src/http/plugins/console.ts), over app.inject on a
// real store, from a real build (console/dist) and from a folder without one. Nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { startTestApp, type TestApp } from '../../test/helpers/app.js';
import { CONSOLE_DIST, registerConsole } from '../../src/http/plugins/console.js';
import { buildConsole } from './helpers/browser.js';

let t: TestApp;
before(async () => {
  buildConsole();
  t = await startTestApp();
});
after(() => t?.close());

describe('serving the console', { timeout: 300_000 }, () => {
  it('/console redirects to /console/; index.html is never cached; hashed assets are cached for a year; no cookie', async () => {
    const redirect = await t.app.inject({ url: '/console' });
    assert.equal(redirect.statusCode, 302);
    assert.equal(redirect.headers.location, '/console/');
    const index = await t.app.inject({ url: '/console/' });
    assert.equal(index.statusCode, 200);
    assert.equal(index.headers['cache-control'], 'no-cache');
    assert.match(String(index.headers['content-security-policy']), /default-src 'self'/);
    assert.equal(index.headers['set-cookie'], undefined);
    const script = /src="\/console\/assets\/([^"]+\.js)"/.exec(index.body)?.[1];
    assert.ok(script && readdirSync(join(CONSOLE_DIST, 'assets')).includes(script));
    const asset = await t.app.inject({ url: `/console/assets/${script}` });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(asset.headers['content-type']), /^text\/javascript/);
    for (const bad of ['../index.html', '..%2F..%2Fpackage.json', 'nope.js', 'x.exe'])
      assert.equal((await t.app.inject({ url: `/console/assets/${bad}` })).statusCode, 404, bad);
  });

  it('without a build, /console/ says how to build it (503)', async () => {
    const app = Fastify();
    registerConsole(app as never, mkdtempSync(join(tmpdir(), 'tally-no-console-')));
    const res = await app.inject({ url: '/console/' });
    assert.equal(res.statusCode, 503);
    assert.match(res.body, /npm run build:console/);
    await app.close();
  });
});
