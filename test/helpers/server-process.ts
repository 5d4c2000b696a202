// Starts src/server.ts as a real child process, for tests that need signals, kills and restarts.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { killOnExit } from './on-exit.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves once the output holds `text` (the first start's banner follows readiness by a moment). */
  printed(text: string, timeoutMs?: number): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startServer(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  const port = await freePort();
  const child = killOnExit(
    spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early: ${out}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not become ready: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    output: () => out,
    async printed(text, ms = 30_000) {
      const until = Date.now() + ms;
      while (!out.includes(text)) {
        if (Date.now() > until) throw new Error(`"${text}" not printed: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
