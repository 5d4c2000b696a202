// Issue 12 item 12: a bench or test that fails stops what it started. Real child processes and
// real folders; the fixture leaves by process.exit, an uncaught error, a rejection or a signal.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/** Running: it exists and is not a zombie waiting for init to reap it. */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
};

async function leave(how: string): Promise<{ pid: number; dir: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/exits-with-a-child.ts', how], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [line] = (await once(createInterface({ input: proc.stdout! }), 'line')) as [string];
  const started = JSON.parse(line) as { pid: number; dir: string };
  if (how === 'signal') proc.kill('SIGTERM');
  await once(proc, 'exit');
  return started;
}

describe('what a bench or test starts is stopped on every way out', () => {
  for (const how of ['exit', 'throw', 'reject', 'signal']) {
    it(`by ${how}: the child is killed and the folder removed`, async () => {
      const { pid, dir } = await leave(how);
      for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(alive(pid), false, `child ${pid} still runs`);
      assert.equal(existsSync(dir), false, `${dir} still exists`);
    });
  }
});
