// The first start as a user meets it: the real server process (src/server.ts through tsx), the
// embedded store in a temporary folder, the real CLI. Nothing faked.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { event } from './helpers/app.js';
import { freePort, startServer } from './helpers/server-process.js';

const run = promisify(execFile);

/** Starts the server expecting it to fail: its exit code and everything it printed. */
function failingStart(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('settings are validated at start', () => {
  for (const [name, value, takes] of [
    ['PORT', '99999', /PORT takes a port number from 0 to 65535, but it is set to "99999"/],
    ['LOG_LEVEL', 'verbose', /LOG_LEVEL takes one of fatal, error, warn, info, debug, trace, silent, but it is set to "verbose"/],
    ['SHUTDOWN_GRACE_MS', '1.5s', /SHUTDOWN_GRACE_MS takes a whole number of milliseconds/],
    ['ACCESS_LOG', 'maybe', /ACCESS_LOG takes true or false/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL takes a postgres:\/\/ URL/],
    // Values past what a timer or a date can hold: refused, never run every millisecond or failing later.
    ['ROLLUP_INTERVAL_SECONDS', '3000000', /ROLLUP_INTERVAL_SECONDS takes a whole number of seconds from 1 to 2147483/],
    ['SHUTDOWN_GRACE_MS', '3000000000', /SHUTDOWN_GRACE_MS takes a whole number of milliseconds from 0 to 1073741823/],
    ['TRIAL_DAYS', '200000000', /TRIAL_DAYS takes a whole number of days from 0 to 36500/],
    ['SESSION_TIMEOUT_MINUTES', '9000000000000', /SESSION_TIMEOUT_MINUTES takes a whole number of minutes from 1 to 52560000/],
    ['DEAD_LETTER_RETENTION_DAYS', '90000000000', /DEAD_LETTER_RETENTION_DAYS takes a whole number of days from 1 to 36500/],
  ] as const) {
    it(`${name}=${value}: one sentence naming the variable and what it takes, exit 1, no stack trace`, async () => {
      const { code, stdout, stderr } = await failingStart({ [name]: value, DATA_DIR: join(tmpdir(), 'tally-never-created') });
      assert.equal(code, 1);
      assert.equal(stdout, '');
      const lines = stderr.trim().split('\n');
      assert.equal(lines.length, 1, stderr);
      assert.match(lines[0]!, takes);
      assert.doesNotMatch(stderr, /\bat .*\(.*:\d+:\d+\)/, 'no stack trace');
    });
  }

  it('a plans file with a wrong value names the plan and the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-plans-'));
    try {
      const file = join(dir, 'plans.json');
      (await import('node:fs')).writeFileSync(file, JSON.stringify({ starter: { requests_per_minute: 0 } }));
      const { code, stderr } = await failingStart({ PLANS_FILE: file, DATA_DIR: dir });
      assert.equal(code, 1);
      assert.equal(stderr.trim().split('\n').length, 1, stderr);
      assert.match(stderr, /starter\.requests_per_minute must be a number, 1 or more/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('first run', () => {
  it('a start that cannot listen (port taken) creates nothing and says so in one sentence; the next start creates the demo tenant', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-first-'));
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', r));
    try {
      const failed = await failingStart({ DATA_DIR: dir, DATABASE_URL: '', PORT: String(port), HOST: '127.0.0.1' });
      assert.equal(failed.code, 1);
      assert.match(failed.stderr, new RegExp(`Port ${port} on 127.0.0.1 is already in use`));
      assert.doesNotMatch(failed.stdout, /demo tenant/, 'no keys printed, none created');
      await new Promise<void>((r) => blocker.close(() => r()));

      const server = await startServer({ DATA_DIR: dir, DATABASE_URL: '', ADMIN_TOKEN: '' });
      try {
        await server.printed('Operator token');
        assert.match(server.output(), /First start: created a demo tenant \(unlimited plan/);
        // The operator token: generated, kept in DATA_DIR readable by its owner only, printed once.
        const token = readFileSync(join(dir, 'admin-token'), 'utf8').trim();
        assert.equal(statSync(join(dir, 'admin-token')).mode & 0o777, 0o600);
        assert.ok(server.output().includes(token), 'printed on the first start');
        const tenants = await fetch(`${server.url}/admin/v1/tenants`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(tenants.status, 200);
        const { data } = (await tenants.json()) as { data: { name: string; plan: string }[] };
        assert.deepEqual(
          data.map((t) => [t.name, t.plan]),
          [['demo', 'unlimited']],
          'exactly one demo tenant',
        );
      } finally {
        await server.stop();
      }
      const again = await startServer({ DATA_DIR: dir, DATABASE_URL: '', ADMIN_TOKEN: '' });
      try {
        await new Promise((r) => setTimeout(r, 1000));
        assert.doesNotMatch(again.output(), /demo tenant|Operator token/, 'keys and token are printed once');
      } finally {
        await again.stop();
      }
    } finally {
      blocker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the CLI finds the running server through DATA_DIR: list-tenants, then a new key for the demo tenant that works', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-cli-live-'));
    const env = { DATA_DIR: dir, DATABASE_URL: '', ADMIN_TOKEN: '' };
    const server = await startServer(env);
    try {
      await server.printed('Operator token');
      const cli = async (...args: string[]) => JSON.parse((await run('npx', ['tsx', 'src/cli/admin.ts', ...args], { env: { ...process.env, ...env } })).stdout);
      const { data } = await cli('list-tenants');
      assert.equal(data.length, 1);
      const demo = data[0];
      assert.equal(demo.plan, 'unlimited');
      const key = await cli('issue-key', demo.id, '--permissions', 'ingest', '--name', 'recovered');
      const res = await fetch(`${server.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify([event({ product: 'demo-app' })]),
      });
      assert.equal(res.status, 200, await res.text());
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
