// `npm start` as a user runs it: the real npm, the built server (dist/, built here first), the
// embedded store in a temporary folder. Nothing is faked; the signal goes to npm's own process.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './helpers/server-process.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start', () => {
  it('serves from dist/, and SIGTERM sent to the npm process stops the server within SHUTDOWN_GRACE_MS', async () => {
    execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'tally-start-'));
    const port = await freePort();
    const grace = 10_000;
    const npm = spawn('npm', ['start'], {
      env: { ...process.env, DATA_DIR: dir, DATABASE_URL: '', PORT: String(port), HOST: '127.0.0.1', SHUTDOWN_GRACE_MS: String(grace), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout!.on('data', (d) => (out += d));
    npm.stderr!.on('data', (d) => (out += d));
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        assert.equal(npm.exitCode, null, `npm start exited early: ${out}`);
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) break;
        assert.ok(Date.now() < deadline, `not ready in time: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      // The demo tenant is made once the server listens, so its banner may follow readiness by a moment.
      while (!out.includes('API reference:') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      // The server's own pid, from the embedded store's owner file: not npm's.
      const serverPid = Number(readFileSync(join(dir, 'tally.pid'), 'utf8'));
      assert.notEqual(serverPid, npm.pid);
      assert.match(out, /node dist\/server\.js/, 'npm start runs the built server');
      assert.match(out, /First start: created a demo tenant \(unlimited plan/);

      const started = Date.now();
      npm.kill('SIGTERM');
      while (alive(serverPid) && Date.now() - started < grace + 2000) await new Promise((r) => setTimeout(r, 50));
      assert.equal(alive(serverPid), false, `the server outlived the grace period: ${out}`);
      assert.ok(Date.now() - started < grace, `stopped in ${Date.now() - started} ms`);
      assert.equal(existsSync(join(dir, 'tally.pid')), false, 'the data folder was released');
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => assert.fail('still answering'),
        () => {},
      );
    } finally {
      // The server is npm's child: a failed assertion must not leave it running (nor holding the pipes).
      const pidFile = join(dir, 'tally.pid');
      if (existsSync(pidFile)) {
        const pid = Number(readFileSync(pidFile, 'utf8'));
        if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
      }
      if (npm.exitCode === null) npm.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
