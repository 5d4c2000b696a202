// What a bench or a test process starts (servers, temporary folders) is stopped on every way out:
// a normal end, process.exit() from a failure path, an uncaught error, SIGINT, SIGTERM or SIGHUP.
// The tasks run synchronously in process 'exit', the one hook every path goes through.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

const tasks: (() => void)[] = [];
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    while (tasks.length > 0) {
      try {
        tasks.pop()!();
      } catch {
        // one failed clean-up must not keep the others from running
      }
    }
  });
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    process.once(signal, () => process.exit(code));
  }
}

/** Runs task when this process exits, however it exits. */
export function onExit(task: () => void): void {
  install();
  tasks.push(task);
}

/** The child is killed if this process exits while it still runs. */
export function killOnExit(child: ChildProcess): ChildProcess {
  onExit(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

/** The folder is removed when this process exits. */
export function removeOnExit(dir: string): string {
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
