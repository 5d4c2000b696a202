import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from '../context.js';

/**
 * Where `npm run build:console` writes the console: console/dist at the repository's root, found
 * from src/http/plugins (tsx) or from a build of the server one or three levels under the root.
 */
const candidates = ['../../../console/dist', '../console/dist'].map((rel) => resolve(fileURLToPath(new URL(rel, import.meta.url))));
export const CONSOLE_DIST = candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0]!;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};
// Vite names assets by content hash (assets/index-3f9a1c2e.js): they never change, so a year.
const ASSET_NAME = /^[A-Za-z0-9_.-]{1,200}$/;
const SECURITY = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
};

/**
 * The console, a static single-page app, at /console: index.html never cached (it names the
 * current hashed assets), assets/* cached for a year. The page talks to /v1 with a Bearer key
 * kept in sessionStorage; no cookie is ever set, so there is no CSRF to defend against.
 */
export function registerConsole(app: App, dist = CONSOLE_DIST): void {
  const indexFile = join(dist, 'index.html');
  let index: Buffer | undefined;
  const page = () => (index ??= existsSync(indexFile) ? readFileSync(indexFile) : undefined);

  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console/', { schema: { hide: true } }, async (_request, reply) => {
    const html = page();
    if (!html) return reply.code(503).type('text/plain; charset=utf-8').send('The console is not built: run `npm run build:console`.\n');
    return reply
      .headers({ ...SECURITY, 'cache-control': 'no-cache' })
      .type('text/html; charset=utf-8')
      .send(html);
  });
  app.get('/console/assets/:file', { schema: { hide: true } }, async (request, reply) => {
    const { file } = request.params as { file: string };
    const type = TYPES[extname(file)];
    if (!ASSET_NAME.test(file) || file.includes('..') || !type) return reply.code(404).type('text/plain').send('not found\n');
    try {
      const body = await readFile(join(dist, 'assets', file));
      return reply
        .headers({ ...SECURITY, 'cache-control': 'public, max-age=31536000, immutable' })
        .type(type)
        .send(body);
    } catch {
      return reply.code(404).type('text/plain').send('not found\n');
    }
  });
}
