import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { QueueStorage, QueuedRecord } from '../core/types.js';
import { unref } from '../core/environment.js';

// The Node queue: a directory of append-only logs, one per process. Every put or remove is one
// line written with a synchronous write(2) before track() returns, so a killed process (SIGKILL,
// OOM, a crash) loses nothing it queued: the data is in the kernel's page cache. fdatasync runs
// at most once a second, against an OS crash. A log grows until compaction rewrites it to its
// live records in a temporary file that replaces it by an atomic rename.
//
// A new process adopts the logs of processes that are gone (the pid in the name no longer runs):
// it renames each to a name with its own pid (atomic, so two new processes never both take one),
// copies the records into its own log, then deletes it. A crash in between leaves a log that the
// next process adopts again; records are keyed by id, so nothing is doubled.

export interface FileStorageOptions {
  dir: string;
  /** Rewrite the log once this many lines are dead and they outnumber the live records (default 2000). */
  compactAfter?: number;
  /** fdatasync the log at most this often while it changes; 0 = never (default 1000 ms). */
  syncEveryMs?: number;
}

const LOG = /^(?:q|adopt)-(\d+)-[0-9a-z]+\.log$/;
/** Temporary files a crash can leave behind: removed once their process is gone. */
const LEFTOVER = /^(?:tmp-(\d+)-[0-9a-z]+|state\.json\.(\d+)\.[0-9a-z]+)$/;
const STATE = 'state.json';

/** Logs that FileStorages of this process have open (two clients may share a directory). */
const OPEN_HERE = new Set<string>();

function ownerAlive(name: string, pid: number): boolean {
  // Our pid on a log no FileStorage here has open: a previous process that had the same pid.
  if (pid === process.pid) return OPEN_HERE.has(name);
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const token = () => Math.random().toString(36).slice(2, 10);

export class FileStorage implements QueueStorage {
  readonly dir: string;
  private readonly file: string;
  private fd: number | undefined;
  private readonly live = new Map<string, string>();
  private dead = 0;
  private state: Record<string, string> | undefined;
  private syncTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly compactAfter: number;
  private readonly syncEveryMs: number;

  constructor(opts: FileStorageOptions) {
    this.dir = opts.dir;
    this.compactAfter = opts.compactAfter ?? 2000;
    this.syncEveryMs = opts.syncEveryMs ?? 1000;
    mkdirSync(this.dir, { recursive: true });
    this.file = join(this.dir, `q-${process.pid}-${token()}.log`);
    OPEN_HERE.add(this.file);
  }

  load(): QueuedRecord[] {
    const adopted: string[] = [];
    const names = readdirSync(this.dir);
    for (const name of names) {
      const m = LEFTOVER.exec(name);
      if (m && !ownerAlive(name, Number(m[1] ?? m[2]))) unlinkSync(join(this.dir, name));
    }
    const logs = names
      .filter((name) => LOG.test(name) && !ownerAlive(join(this.dir, name), Number(LOG.exec(name)![1])))
      .map((name) => ({ name, mtime: statSync(join(this.dir, name), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => a.mtime - b.mtime);
    for (const { name } of logs) {
      const mine = join(this.dir, `adopt-${process.pid}-${token()}.log`);
      try {
        renameSync(join(this.dir, name), mine);
      } catch {
        continue; // another new process took it first
      }
      this.replay(readFileSync(mine, 'utf8'));
      adopted.push(mine);
    }
    this.rewrite();
    for (const f of adopted) unlinkSync(f);
    return [...this.live.values()].map((line) => JSON.parse(line) as QueuedRecord);
  }

  put(record: QueuedRecord): void {
    const json = JSON.stringify(record);
    if (this.live.has(record.id)) this.dead++;
    this.live.set(record.id, json);
    this.append(`+${json}\n`);
  }

  remove(ids: readonly string[]): void {
    const gone = ids.filter((id) => this.live.delete(id));
    if (gone.length === 0) return;
    this.dead += gone.length + 1;
    this.append(`-${JSON.stringify(gone)}\n`);
  }

  getState(key: string): string | undefined {
    return this.readState()[key];
  }

  setState(key: string, value: string | undefined): void {
    const state = this.readState();
    if (value === undefined) delete state[key];
    else state[key] = value;
    const tmp = join(this.dir, `${STATE}.${process.pid}.${token()}`);
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, JSON.stringify(state));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.dir, STATE));
  }

  close(): void {
    OPEN_HERE.delete(this.file);
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    if (this.fd === undefined) return;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = undefined;
    // Nothing left to send: no log for anyone to adopt. Otherwise it waits for the next process.
    if (this.live.size === 0) unlinkSync(this.file);
  }

  /** Lines: `+{record}` puts (the later line wins), `-[ids]` removes; a torn last line is skipped. */
  private replay(text: string): void {
    for (const line of text.split('\n')) {
      try {
        if (line.startsWith('+')) {
          const r = JSON.parse(line.slice(1)) as QueuedRecord;
          if (typeof r?.id === 'string') this.live.set(r.id, line.slice(1));
        } else if (line.startsWith('-')) {
          for (const id of JSON.parse(line.slice(1)) as string[]) this.live.delete(id);
        }
      } catch {
        // a line cut by a crash mid-write: what it held was never acknowledged to the caller
      }
    }
  }

  private append(line: string): void {
    if (this.fd === undefined) throw new Error(`tally queue ${this.file} is not open`);
    writeSync(this.fd, line);
    if (this.dead >= this.compactAfter && this.dead > this.live.size) this.rewrite();
    else this.scheduleSync();
  }

  /** The live records to a temporary file, synced, renamed over the log: never a half-written log. */
  private rewrite(): void {
    const tmp = join(this.dir, `tmp-${process.pid}-${token()}`);
    const fd = openSync(tmp, 'w');
    try {
      let chunk = '';
      for (const json of this.live.values()) {
        chunk += `+${json}\n`;
        if (chunk.length > 65_536) {
          writeSync(fd, chunk);
          chunk = '';
        }
      }
      if (chunk) writeSync(fd, chunk);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    this.syncDir();
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = openSync(this.file, 'a');
    this.dead = 0;
  }

  private scheduleSync(): void {
    if (this.syncTimer || this.syncEveryMs <= 0) return;
    this.syncTimer = unref(
      setTimeout(() => {
        this.syncTimer = undefined;
        try {
          if (this.fd !== undefined) fsyncSync(this.fd);
        } catch {
          // closed meanwhile
        }
      }, this.syncEveryMs),
    );
  }

  /** The rename is durable only once the directory entry is. */
  private syncDir(): void {
    try {
      const fd = openSync(this.dir, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch {
      // not supported on this platform (Windows): the rename is still atomic
    }
  }

  private readState(): Record<string, string> {
    if (this.state) return this.state;
    const path = join(this.dir, STATE);
    try {
      this.state = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, string>) : {};
    } catch {
      this.state = {};
    }
    return this.state;
  }
}
