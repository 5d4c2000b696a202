// Headless Chromium (Debian's /usr/bin/chromium through playwright-core) and a tiny site server
// for the browser tests: the page is served from "localhost", the API from "127.0.0.1", so the
// two are different origins and CORS applies.
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// In CI a missing browser is a failure (.ci/run installs it); on a developer's machine, a skip.
export const skipWithoutChromium = !existsSync(CHROMIUM) && !process.env.CI ? `no Chromium at ${CHROMIUM} (apt-get install chromium)` : false;

export interface Site {
  url: string;
  close(): void;
}

/** Serves `files` by path (JavaScript), and a small HTML page titled after its path for any other URL. */
export async function startSite(files: Record<string, Buffer | string>, html?: (path: string) => string): Promise<Site> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const file = files[path];
    if (file !== undefined) res.writeHead(200, { 'content-type': 'text/javascript' }).end(file);
    else res.writeHead(200, { 'content-type': 'text/html' }).end(html ? html(path) : `<!doctype html><title>page ${path}</title><p>${path}</p>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://localhost:${(server.address() as { port: number }).port}/`, close: () => server.close() };
}

export function launchChromium(dir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(join(dir, 'profile'), {
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
