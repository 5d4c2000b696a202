// The embedded store's server memory at rest: `node dist/server.js` (built first) on a fresh DATA_DIR
// (a first start: initdb, migrations, the demo tenant), then restarted on the same folder; VmRSS
// after it has been idle a while, each time. Options pass extra node flags and environment.
// Usage: npm run bench:memory -- [--idle 10] [--node-flags "--max-semi-space-size=2"] [--runs 2]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: { idle: { type: 'string', default: '10' }, 'node-flags': { type: 'string', default: '' }, runs: { type: 'string', default: '2' } },
});
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const p = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return p;
}

async function idleRss(dataDir: string): Promise<number> {
  const port = await freePort();
  const flags = opt['node-flags'] ? opt['node-flags'].split(' ') : [];
  const child = spawn(process.execPath, [...flags, 'dist/server.js'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  for (let i = 0; ; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 1200) throw new Error('not ready in 120 s');
    await sleep(100);
  }
  await sleep(Number(opt.idle) * 1000);
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return Math.round(kb / 1024);
}

execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore' });
const first: number[] = [];
const again: number[] = [];
for (let run = 0; run < Number(opt.runs); run++) {
  const dir = mkdtempSync(join(tmpdir(), 'tally-memory-'));
  try {
    first.push(await idleRss(dir));
    again.push(await idleRss(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
console.log(JSON.stringify({ node_flags: opt['node-flags'], idle_s: Number(opt.idle), first_start_rss_mb: first, restart_rss_mb: again }));
