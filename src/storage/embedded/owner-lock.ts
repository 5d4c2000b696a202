import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// The embedded store has one owner process: PGlite cannot share its folder. The server writes
// its pid here; the admin CLI and a second server check it before opening the folder.
const lockPath = (dataDir: string) => join(dataDir, 'tally.pid');

/** The pid of a live process that owns dataDir, other than this one. */
export function embeddedOwner(dataDir: string): number | undefined {
  const path = lockPath(dataDir);
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, 'utf8'));
  if (!(pid > 0) || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // ESRCH: a stale file from a process that is gone. EPERM: alive, another user's.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return undefined;
    if (code === 'EPERM') return pid;
    throw err;
  }
}

export function takeEmbeddedLock(dataDir: string): void {
  const owner = embeddedOwner(dataDir);
  if (owner) throw new Error(`another Tally process (pid ${owner}) is using ${dataDir}; the embedded store has one owner`);
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(lockPath(dataDir), String(process.pid));
}

export function releaseEmbeddedLock(dataDir: string): void {
  rmSync(lockPath(dataDir), { force: true });
}
