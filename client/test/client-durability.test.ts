// Durability against the real Tally server on a real socket: an outage (the app closed, then a
// new app on the same port and store) and crashes (application processes killed with SIGKILL,
// or dying of an uncaught error, then a new process on the same queue directory). Nothing is
// faked: real child processes, real files, real HTTP; only the backoff is shortened.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, FileStorage } from '../src/node.js';
import type { Db } from '../../src/storage/db.js';
import { openTestDb, recordingFetch, rows, sessions, startServer, storedEventIds, tenant, type RunningServer } from './helpers/server.js';

const FIXTURE = new URL('./fixtures/app-process.ts', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tally-queue-'));
  dirs.push(d);
  return d;
};

let db: Db;
let server: RunningServer;
before(async () => {
  db = await openTestDb();
  server = await startServer({ db });
});
after(async () => {
  await server.close();
  await db.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * A proxy in front of the server that lets the first `pass` event batches through and then holds
 * every later one unanswered: the app behind it is sure to have sent some of its queue and to
 * still hold the rest, whatever the server's speed.
 */
async function gate(upstream: string, pass: number): Promise<{ url: string; held: () => number; close: () => void }> {
  const held: http.ServerResponse[] = [];
  let passed = 0;
  const hop = new Set(['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
  const proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/events' && passed++ >= pass) {
        held.push(res);
        return;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !hop.has(k))) as Record<string, string>;
      fetch(`${upstream}${req.url}`, { method: req.method!, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) })
        .then(async (r) => {
          res.writeHead(r.status, Object.fromEntries([...r.headers].filter(([k]) => !hop.has(k))));
          res.end(Buffer.from(await r.arrayBuffer()));
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`,
    held: () => held.length,
    close: () => {
      for (const r of held) r.destroy();
      proxy.closeAllConnections();
      proxy.close();
    },
  };
}

interface Run {
  events: string[];
  session: string;
  out: () => string;
  exited: Promise<number | null>;
  kill(): void;
}

/** Starts the fixture app; resolves once it printed its session id. */
async function runApp(env: Record<string, string>): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const events: string[] = [];
  let session = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith('event ')) events.push(line.slice(6));
      else if (line.startsWith('session ')) session = line.slice(8);
      else out += `${line}\n`;
    }
  });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started = Date.now();
  while (!session && child.exitCode === null) {
    if (Date.now() - started > 30_000) throw new Error(`the app did not start: ${err}`);
    await sleep(20);
  }
  return {
    events,
    get session() {
      return session;
    },
    out: () => out + err,
    exited,
    kill: () => child.kill('SIGKILL'),
  };
}

describe('client: nothing queued is lost', () => {
  it('an outage: the server is gone for seconds while the app keeps tracking; every event is stored exactly once', async () => {
    const tn = await tenant(server);
    const rec = recordingFetch();
    const client = createClient({
      apiKey: tn.ingestKey,
      endpoint: server.url,
      product: 'app',
      productVersion: '1.0.0',
      storage: new FileStorage({ dir: tempDir() }),
      flushAt: 10,
      flushIntervalMs: 200,
      retry: { baseDelayMs: 100, maxDelayMs: 1000 },
      fetch: rec.fetch,
      handleExit: false,
      logger: false,
    });
    const ids: string[] = [];
    const ticker = setInterval(() => ids.push(client.track('ui', 'tick', { n: ids.length })!), 10);
    await sleep(1000);
    const port = server.port;
    await server.close(); // the same store stays open: startTestApp({db}) reuses it
    await sleep(3000);
    assert.ok(client.stats().queued > 100, `events pile up during the outage: ${client.stats().queued}`);
    server = await startServer({ db, port });
    await sleep(1000);
    clearInterval(ticker);
    const result = await client.shutdown({ timeoutMs: 20_000 });
    assert.deepEqual(result, { delivered: true, remaining: 0 });
    const stored = await storedEventIds(db, tn.id);
    assert.equal(stored.length, ids.length, 'stored exactly once');
    assert.deepEqual(stored.sort(), [...ids].sort());
    assert.ok(
      rec.log.some((r) => r.status === 'error'),
      'the outage was seen as network errors',
    );
    const [s] = await sessions(db, tn.id);
    assert.equal(s!.end_reason, 'normal');
  });

  it('a process killed (SIGKILL) mid-queue: the next process on the same directory sends everything, and ends the orphaned session with sdk_recovery', async () => {
    const tn = await tenant(server);
    const env = { TALLY_KEY: tn.ingestKey, TALLY_ENDPOINT: server.url, QUEUE_DIR: tempDir(), FLUSH_AT: '200' };
    const proxy = await gate(server.url, 2);
    const first = await runApp({ ...env, TALLY_ENDPOINT: proxy.url, MODE: 'track-until-killed' });
    for (let waited = 0; (proxy.held() === 0 || first.events.length <= 200) && waited < 10_000; waited += 50) await sleep(50);
    await sleep(300);
    first.kill();
    await first.exited;
    const killedAt = Date.now();
    proxy.close();
    const queued = [...first.events];
    assert.ok(queued.length > 200, `events tracked before the kill: ${queued.length}`);
    const storedBefore = (await storedEventIds(db, tn.id)).length;
    assert.ok(storedBefore < queued.length, `killed mid-queue: ${storedBefore} of ${queued.length} were sent`);

    const second = await runApp({ ...env, MODE: 'flush' });
    assert.equal(await second.exited, 0, second.out());
    assert.match(second.out(), /result \{"delivered":true,"remaining":0/);
    const stored = new Set(await storedEventIds(db, tn.id));
    const lost = queued.filter((id) => !stored.has(id));
    assert.deepEqual(lost, [], 'every event queued before the kill is stored');
    const byId = await sessions(db, tn.id);
    const orphan = byId.find((s) => s.session_id === first.session)!;
    assert.equal(orphan.end_reason, 'sdk_recovery');
    assert.ok(orphan.ended_at!.getTime() <= killedAt && orphan.ended_at!.getTime() > killedAt - 3000, 'ended at its last activity, not at recovery');
    assert.equal(byId.find((s) => s.session_id === second.session)!.end_reason, 'normal');
  });

  it('a process that dies of an uncaught error: its fatal exception and its events are sent by the next process, the session recovered', async () => {
    const tn = await tenant(server);
    // The server is unreachable for the dying process: everything it does stays on disk.
    const env = { TALLY_KEY: tn.ingestKey, TALLY_ENDPOINT: 'http://127.0.0.1:9', QUEUE_DIR: tempDir() };
    const first = await runApp({ ...env, MODE: 'throw' });
    assert.equal(await first.exited, 1, 'Node still exits with its own uncaught-error behaviour');
    assert.equal(first.events.length, 10);
    const second = await runApp({ ...env, TALLY_ENDPOINT: server.url, MODE: 'flush' });
    assert.equal(await second.exited, 0, second.out());
    assert.deepEqual((await storedEventIds(db, tn.id)).sort(), [...first.events].sort());
    const [x] = await rows<{ exception_type: string; severity: string; session_id: string }>(
      db,
      'SELECT exception_type, severity, session_id FROM exceptions WHERE tenant_id = $1',
      [tn.id],
    );
    assert.deepEqual(x, { exception_type: 'TypeError', severity: 'fatal', session_id: first.session });
    const orphan = (await sessions(db, tn.id)).find((s) => s.session_id === first.session)!;
    assert.equal(orphan.end_reason, 'sdk_recovery', 'its start never reached the server: created from the recovery context');
  });

  it('process.exit() without shutdown(): the exit hook queues a normal session end; a natural end flushes by itself', async () => {
    const tn = await tenant(server);
    const env = { TALLY_KEY: tn.ingestKey, TALLY_ENDPOINT: server.url, QUEUE_DIR: tempDir(), FLUSH_AT: '1000' };
    const exiting = await runApp({ ...env, MODE: 'exit' });
    assert.equal(await exiting.exited, 0);
    const natural = await runApp({ ...env, MODE: 'natural' });
    assert.equal(await natural.exited, 0, natural.out());
    const stored = new Set(await storedEventIds(db, tn.id));
    assert.ok(
      [...natural.events, ...exiting.events].every((id) => stored.has(id)),
      "both processes' events are stored",
    );
    const byId = await sessions(db, tn.id);
    assert.deepEqual(
      [exiting.session, natural.session].map((id) => byId.find((s) => s.session_id === id)?.end_reason),
      ['normal', 'normal'],
    );
  });
});
