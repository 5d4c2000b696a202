// Measures POST /v1/events end to end (a spawned server, driven over real HTTP from this process) against the raw ceiling of the same store: the same rows through the same events insert (eventsInsertSql, as its own statement and transaction, as the server's batch write runs it), no HTTP, no validation.
// Usage: npm run bench:ingest -- [--store pglite|postgres] [--duration 15] [--concurrency 4] [--runs 3] [--warmup 5]
//        [--latency-duration 5] [--latency-concurrency N] [--rollups] [--rollups-duration 180] [--backlog 1000000] [--profile DIR] [--store-alone]
//        [--long-read PATH [--long-read-duration 20]] [--alternate K [--alternate-duration 60]]
//   (DATABASE_URL picks the PostgreSQL database; see docs/benchmarks.md). --rollups: the same HTTP load again on a server with the
//   rollup job at its default interval, the read model's lag every 5 s, the events it folded by the phase's end, and the database
//   time to fold a backlog of --backlog events.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomFillSync, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { LOCKS, openDb, type Db } from '../src/storage/db.js';
import { eventsInsertSql, type EventRecord } from '../src/storage/events.js';
import { migrate } from '../src/storage/migrate.js';
import { killOnExit, removeOnExit } from '../test/helpers/on-exit.js';
import { foldBacklog, LagTracker, probe, sampleLag } from './read-model.js';

const { values: opt } = parseArgs({
  options: {
    store: { type: 'string', default: 'pglite' },
    duration: { type: 'string', default: '15' },
    concurrency: { type: 'string', default: '4' },
    runs: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '5' },
    'latency-duration': { type: 'string', default: '5' },
    'latency-concurrency': { type: 'string' },
    profile: { type: 'string' },
    rollups: { type: 'boolean', default: false },
    'rollups-duration': { type: 'string', default: '180' },
    backlog: { type: 'string', default: '1000000' },
    'store-alone': { type: 'boolean', default: false },
    'long-read': { type: 'string' },
    'long-read-duration': { type: 'string', default: '20' },
    alternate: { type: 'string', default: '0' },
    'alternate-duration': { type: 'string', default: '60' },
  },
});
const STORE = opt.store === 'postgres' ? 'postgres' : opt.store === 'pglite' ? 'pglite' : fail(`--store must be pglite or postgres, got ${opt.store}`);
const [DURATION, CONCURRENCY, RUNS, WARMUP, LAT_DURATION] = [opt.duration, opt.concurrency, opt.runs, opt.warmup, opt['latency-duration']].map(Number) as [
  number,
  number,
  number,
  number,
  number,
];
const LAT_CONCURRENCY = Number(opt['latency-concurrency'] ?? CONCURRENCY);
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/tally_bench';
const DB_NAME = decodeURIComponent(new URL(DATABASE_URL).pathname.slice(1));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ADMIN_TOKEN = randomUUID();
const tmp = removeOnExit(mkdtempSync(join(tmpdir(), 'tally-bench-')));

function fail(msg: string): never {
  console.error(msg);
  process.exit(2);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const r0 = (n: number) => Math.round(n);

// ---- Event ids: UUIDv7 from the uuid package, with our own counter and a pooled random source
// (v7() without options asks the CSPRNG for 16 bytes per id: ~350k ids/s, a third of a core at 100k events/s).
const randomPool = Buffer.alloc(16 * 4096);
let poolAt = randomPool.length;
let seq = 0;
function nextId(msecs: number): string {
  if (poolAt === randomPool.length) {
    randomFillSync(randomPool);
    poolAt = 0;
  }
  return uuidv7({ random: randomPool.subarray(poolAt, (poolAt += 16)), msecs, seq: seq++ });
}

// ---- Realistic events: 200 actors in 20 accounts, 3 licenses per account, 5 versions, 3-8 mostly-string properties.
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const NAMES = [
  ['app', 'started'],
  ['ui', 'screen_viewed'],
  ['ui', 'button_clicked'],
  ['editor', 'document_saved'],
  ['editor', 'document_opened'],
  ['export', 'pdf_exported'],
  ['search', 'query_run'],
  ['sync', 'completed'],
] as const;
const VERSIONS = ['3.2.1', '3.2.1', '3.2.0', '3.3.0-beta.2', '3.1.4', '2.9.12'];
const PROPS: [string, () => string | number | boolean][] = [
  ['screen', () => pick(['home', 'settings', 'editor', 'billing', 'reports', 'onboarding/step-2'])],
  ['button', () => pick(['save', 'cancel', 'export', 'share', 'upgrade_now'])],
  ['theme', () => pick(['dark', 'light', 'system'])],
  ['locale', () => pick(['en-US', 'de-DE', 'fr-FR', 'ja-JP', 'pt-BR'])],
  ['os', () => pick(['Windows 11 23H2', 'macOS 14.5', 'Ubuntu 24.04', 'iOS 17.5'])],
  ['plan', () => pick(['free', 'pro', 'team', 'enterprise'])],
  ['source', () => pick(['toolbar', 'menu', 'shortcut', 'context_menu'])],
  ['feature_flag', () => pick(['new-editor', 'fast-sync', 'ai-assist-v2'])],
  ['result', () => pick(['ok', 'cancelled', 'error:timeout'])],
  ['duration_ms', () => Math.floor(Math.random() * 5000)],
  ['offline', () => Math.random() < 0.1],
];
const SESSIONS = Array.from({ length: 200 }, () => uuidv7());
const PLACEHOLDER = 'ffffffff-ffff-7fff-bfff-ffffffffffff';

function makeEvent(product: string): Record<string, unknown> {
  const actor = Math.floor(Math.random() * 200);
  const [category, name] = pick(NAMES);
  const props = [...PROPS].sort(() => Math.random() - 0.5).slice(0, 3 + Math.floor(Math.random() * 6));
  return {
    event_id: PLACEHOLDER,
    category,
    name,
    timestamp: new Date(Date.now() - Math.floor(Math.random() * 3_600_000)).toISOString(),
    actor_id: `user-${String(actor).padStart(5, '0')}@acme-${actor % 20}.example`,
    product,
    product_version: pick(VERSIONS),
    session_id: SESSIONS[actor],
    ...(Math.random() < 0.9 ? { account_id: `acct_${actor % 20}`, license_id: `lic_${actor % 20}_${actor % 3}` } : {}),
    properties: Object.fromEntries(props.map(([k, v]) => [k, v()])),
  };
}

/** A batch body with its id slots: each send copies the bytes and writes fresh ids in place. */
interface Template {
  body: Buffer;
  slots: number[];
  records: Omit<EventRecord, 'event_id'>[];
}
function makeTemplate(n: number, productSlug: string, rawProductId: string): Template {
  const events = Array.from({ length: n }, () => makeEvent(productSlug));
  const body = Buffer.from(JSON.stringify(events), 'latin1'); // ASCII only, so string offsets are byte offsets
  const slots: number[] = [];
  for (let at = body.indexOf(PLACEHOLDER); at >= 0; at = body.indexOf(PLACEHOLDER, at + 1)) slots.push(at);
  // What validate-fields and resolve-product make of each element: the rows persist() hands to the batch write.
  const records = events.map((e) => ({
    product_id: rawProductId,
    product_version: e.product_version as string,
    category: e.category as string,
    name: e.name as string,
    occurred_at: e.timestamp as string,
    actor_id: e.actor_id as string,
    session_id: e.session_id as string,
    account_id: (e.account_id as string | undefined) ?? null,
    license_id: (e.license_id as string | undefined) ?? null,
    properties: e.properties as EventRecord['properties'],
    schema_version: null,
  }));
  return { body, slots, records };
}
function fillBody(t: Template): Buffer {
  const buf = Buffer.allocUnsafe(t.body.length);
  t.body.copy(buf);
  const ms = Date.now();
  for (const at of t.slots) buf.write(nextId(ms), at, 36, 'latin1');
  return buf;
}
function fillRecords(t: Template): EventRecord[] {
  const ms = Date.now();
  return t.records.map((r) => ({ event_id: nextId(ms), ...r })); // ids are monotonic, so already in persist()'s order
}

// ---- HTTP: keep-alive sockets, one per sender; the response is checked from its first bytes.
let port = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let duplicatesSeen = 0;
let acked = 0; // events the server acknowledged, checked against its usage counter at the end
const tracker = new LagTracker();
function postEvents(key: string, body: Buffer, expect: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/events',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        let head = '';
        res.on('data', (chunk: Buffer) => {
          if (head.length < 40) head += chunk.toString('latin1', 0, 40);
          if (chunk.includes('"duplicate"')) duplicatesSeen++;
        });
        res.on('end', () =>
          res.statusCode === 200 && head.startsWith(`{"accepted":${expect},"rejected":0`)
            ? ((acked += expect), tracker.ack(acked), resolve())
            : reject(new Error(`POST /v1/events: ${res.statusCode} ${head}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
async function api<T>(method: string, path: string, token: string, body?: unknown): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : null,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

// ---- CPU accounting (% of one core): this process, the server, PostgreSQL's processes, and the rest of the machine (other load).
const ticks = (pid: number | string) => {
  try {
    return (
      readFileSync(`/proc/${pid}/stat`, 'utf8')
        .split(') ')[1]!
        .split(' ')
        .slice(11, 13)
        .reduce((a, b) => a + Number(b), 0) * 10
    );
  } catch {
    return 0;
  }
};
/** CPU ms by pid of the PostgreSQL processes that work for us: backends of our database (their title names it) and the
 *  shared background ones. Other databases' backends count as other load. A process that exits mid-phase counts zero. */
const ours = (title: string) => {
  if (title.includes('parallel worker')) return false;
  const perDatabase = / ([\d.:]+\(\d+\)|\[local\])/.test(title) || title.includes('autovacuum worker');
  return !perDatabase || title.split(/[\s\0]+/).includes(DB_NAME);
};
const pgTicks = () =>
  new Map(
    STORE !== 'postgres'
      ? []
      : readdirSync('/proc')
          .filter((d) => /^\d+$/.test(d))
          .flatMap((d) => {
            try {
              const title = readFileSync(`/proc/${d}/cmdline`, 'utf8');
              return title.startsWith('postgres: ') && ours(title) ? [[d, ticks(d)] as const] : [];
            } catch {
              return [];
            }
          }),
  );
const pgDelta = (before: Map<string, number>) => [...pgTicks()].reduce((sum, [pid, t]) => sum + t - (before.get(pid) ?? 0), 0);
const machine = () => readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1, 9).map(Number);
function cpuMeter(serverPid: number) {
  const [c0, s0, p0, m0, t0] = [process.cpuUsage(), ticks(serverPid), pgTicks(), machine(), performance.now()];
  return () => {
    const ms = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const m = machine().map((v, i) => v - m0[i]!);
    const total = m.reduce((a, b) => a + b, 0);
    const [bench, server, postgres, busy] = [
      (c.user + c.system) / 1000 / ms,
      (ticks(serverPid) - s0) / ms,
      pgDelta(p0) / ms,
      ((total - m[3]! - m[4]!) / total) * 2,
    ].map((x) => r0(x * 100)) as [number, number, number, number];
    return `cpu %: bench ${bench}, server ${server}, postgres ${postgres}, other ${Math.max(0, busy - bench - server - postgres)}; machine busy ${busy}/200`;
  };
}

/** N workers, each calling `once` back to back until the deadline; counts events and per-call latency. */
async function closedLoop(workers: number, seconds: number, once: () => Promise<number>) {
  const start = performance.now();
  const end = start + seconds * 1000;
  const latencies: number[] = [];
  let events = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const n = await once(); // not `events += await once()`: that reads `events` before the await and loses other workers' counts
        latencies.push(performance.now() - t);
        events += n;
      }
    }),
  );
  return { events, seconds: (performance.now() - start) / 1000, latencies };
}

// ---- Setup: the store, the server, a tenant and a product.
async function ensurePostgresDatabase(): Promise<void> {
  const c = new pg.Client({ connectionString: Object.assign(new URL(DATABASE_URL), { pathname: '/postgres' }).toString() });
  await c.connect();
  const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME]);
  if (!rowCount) await c.query(`CREATE DATABASE "${DB_NAME.replaceAll('"', '""')}"`);
  await c.end();
}
async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const p = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return p;
}
let current: ChildProcess | undefined; // killed if the bench fails: a server left running would keep folding into later runs
let accessLines = 0;
/** The rollup job's transactions that held the store past its slowStepMs (the embedded store's server logs them), by kind. */
const slowSteps = new Map<string, number[]>();
function startServer(rollups = false): ChildProcess {
  const plansFile = join(tmp, 'plans.json');
  writeFileSync(plansFile, JSON.stringify({ enterprise: { requests_per_minute: 1_000_000 } }));
  // LOG_LEVEL=info (with ACCESS_LOG on, the default) measures the access log's cost; warn leaves it out.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    PLANS_FILE: plansFile,
    DATA_DIR: join(tmp, 'server'),
  };
  // The rollup job folds every new event once a minute; it is its own cost, kept out of the ingest measurement unless --rollups.
  env.ROLLUP_INTERVAL_SECONDS = rollups ? (process.env.ROLLUP_INTERVAL_SECONDS ?? '60') : '86400';
  if (STORE === 'postgres') env.DATABASE_URL = DATABASE_URL;
  else delete env.DATABASE_URL;
  const prof = opt.profile ? ['--cpu-prof', '--cpu-prof-dir', opt.profile] : [];
  // The built server, as `npm start` runs it (dist/, built just now from src/).
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore' });
  const child = killOnExit(spawn(process.execPath, [...prof, 'dist/server.js'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] }));
  current = child;
  // The server's log lines go to our stderr (our stdout ends with the JSON line), but for the access log's, which
  // are only counted; its first-start banner is dropped.
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.includes('"msg":"request"')) accessLines++;
    else if (line.includes('"msg":"rollups: a step held the store"')) {
      const { step, ms } = JSON.parse(line) as { step: string; ms: number };
      const kind = step.split(' ')[0]!;
      slowSteps.set(kind, [...(slowSteps.get(kind) ?? []), ms]);
      process.stderr.write(`server: ${line}\n`); // with what the step did (a fold's slice: xids, events)
    } else if (line.startsWith('{')) process.stderr.write(`server: ${line}\n`);
  });
  child.on('exit', (code, signal) => code !== 0 && signal === null && fail(`server exited with ${code}`));
  return child;
}
async function waitReady(): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  fail('server not ready after 120 s');
}

async function main(): Promise<void> {
  if (STORE === 'postgres') await ensurePostgresDatabase();
  // The raw side: this process's own handle on the same kind of store (PGlite: its own directory, since one process owns a
  // PGlite directory; PostgreSQL: the same database, another tenant id), migrated like the server, syncOnCommit as its default.
  const raw: Db =
    STORE === 'postgres' ? await openDb({ databaseUrl: DATABASE_URL, poolSize: CONCURRENCY }) : await openDb({ dataDir: join(tmp, 'raw'), syncOnCommit: true });
  await migrate(raw);
  port = await freePort();
  let server = startServer();
  await waitReady();
  type Created = { tenant: { id: string }; api_keys: { key: string; permissions: string[] }[] };
  const { tenant, api_keys } = await api<Created>('POST', '/admin/v1/tenants', ADMIN_TOKEN, { name: 'bench', plan: 'enterprise' });
  const ingestKey = api_keys.find((k) => k.permissions.length === 1)!.key;
  const adminKey = api_keys.find((k) => k.permissions.length === 4)!.key;
  await api('POST', '/v1/products', adminKey, { slug: 'desktop-app', name: 'Desktop app' });
  const rawTenant = uuidv7();
  const rawProduct = uuidv7();
  await new Promise((r) => setTimeout(r, 2000));
  const idleRss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  console.log(`server idle (started, a tenant and a product made): VmRSS ${r0(idleRss)} MB`);

  const big = Array.from({ length: 16 }, () => makeTemplate(1000, 'desktop-app', rawProduct));
  const small = Array.from({ length: 16 }, () => makeTemplate(100, 'desktop-app', rawProduct));
  let next = 0;
  const sendBig = async () => (await postEvents(ingestKey, fillBody(big[next++ % big.length]!), 1000), 1000);
  const sendSmall = async () => (await postEvents(ingestKey, fillBody(small[next++ % small.length]!), 100), 100);
  // The server's events insert in the shape its batch write runs it: one statement (its own transaction, durable on the
  // embedded store before it resolves) that returns only the count of new rows.
  const rawSql = `WITH ins AS (${eventsInsertSql('$1', '$2', '$3')} RETURNING 1) SELECT count(*)::int AS n FROM ins`;
  const insertRaw = async () => (await raw.write<{ n: number }>(rawSql, [rawTenant, new Date(), JSON.stringify(fillRecords(big[next++ % big.length]!))]))[0]!.n;

  const kb = Math.round(big[0]!.body.length / 1000);
  console.log(
    `store=${STORE} concurrency=${CONCURRENCY} latency-concurrency=${LAT_CONCURRENCY} duration=${DURATION}s runs=${RUNS} rollups=${opt.rollups ? 'on' : 'off'} body≈${kb} KB/1000 events; server pid ${server.pid}`,
  );
  console.log(`warm-up: ${WARMUP}s HTTP, ${WARMUP}s raw`);
  let counted = (await closedLoop(CONCURRENCY, WARMUP, sendBig)).events; // HTTP events the phases counted, checked against `acked`
  await closedLoop(CONCURRENCY, WARMUP, insertRaw);

  // --rollups: one sender of 100-event batches, 5 a second, during every HTTP phase (job off here, on below).
  let probed = 0;
  const sendProbe = async () => (await postEvents(ingestKey, fillBody(small[next++ % small.length]!), 100), (probed += 100));
  const probesOff: number[] = [];
  const httpRates: number[] = [],
    rawRates: number[] = [],
    p99s: number[] = [];
  for (let run = 1; run <= RUNS; run++) {
    let cpu = cpuMeter(server.pid!);
    const stopProbe = opt.rollups ? probe(sendProbe) : undefined;
    const h = await closedLoop(CONCURRENCY, DURATION, sendBig);
    probesOff.push(...((await stopProbe?.()) ?? []));
    const hc = cpu();
    counted += h.events;
    httpRates.push(h.events / h.seconds);
    cpu = cpuMeter(server.pid!);
    const r = await closedLoop(CONCURRENCY, DURATION, insertRaw);
    const rc = cpu();
    rawRates.push(r.events / r.seconds);
    console.log(
      `run ${run}: http ${r0(h.events / h.seconds)} events/s (p50 ${pct(h.latencies, 50).toFixed(1)} ms, p99 ${pct(h.latencies, 99).toFixed(1)} ms per 1000-event batch; ${hc})`,
    );
    console.log(`run ${run}: raw  ${r0(r.events / r.seconds)} events/s (p50 ${pct(r.latencies, 50).toFixed(1)} ms per 1000-row insert; ${rc})`);
    if (r.events % 1000) console.log('  raw: some rows conflicted (unexpected: every id is new)');
  }
  // 100-event batches alone: no 1000-event background load, LAT_CONCURRENCY senders back to back.
  for (let run = 1; run <= RUNS; run++) {
    const cpu = cpuMeter(server.pid!);
    const s = await closedLoop(LAT_CONCURRENCY, LAT_DURATION, sendSmall);
    const sc = cpu();
    counted += s.events;
    p99s.push(pct(s.latencies, 99));
    console.log(
      `latency run ${run}: 100-event batches, ${s.latencies.length} requests, ${r0(s.events / s.seconds)} events/s, p50 ${pct(s.latencies, 50).toFixed(1)} ms, p99 ${pct(s.latencies, 99).toFixed(1)} ms (${sc})`,
    );
  }

  // --long-read PATH: does a long read stall ingestion? 100-event batches, 5 a second, first alone, then while one
  // client GETs PATH back to back (e.g. a report that reads raw events over the events sent so far).
  const longRead = opt['long-read'] ? await longReadPhase(opt['long-read']) : undefined;
  async function longReadPhase(path: string) {
    const seconds = Number(opt['long-read-duration']);
    const alone = probe(sendProbe);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const probesAlone = await alone();
    const reads: number[] = [];
    const refused: number[] = []; // 422 query_too_large: a read in chunks past its budget (READ_CHUNK_BUDGET_MS)
    let stop = false;
    const reader = (async () => {
      while (!stop) {
        const t = performance.now();
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${adminKey}` } });
        await res.arrayBuffer();
        if (res.status === 422) refused.push(performance.now() - t);
        else if (res.ok) reads.push(performance.now() - t);
        else throw new Error(`GET ${path}: ${res.status}`);
      }
    })();
    const during = probe(sendProbe);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const probesDuring = await during();
    stop = true;
    await reader;
    const result = {
      path,
      reads: reads.length,
      read_ms_p50: reads.length ? Number(pct(reads, 50).toFixed(1)) : null,
      read_ms_max: reads.length ? Number(Math.max(...reads).toFixed(1)) : null,
      refused_422: refused.length,
      refused_after_ms_max: refused.length ? Number(Math.max(...refused).toFixed(1)) : null,
      probe_100_event_p99_ms: { alone: Number(pct(probesAlone, 99).toFixed(1)), during: Number(pct(probesDuring, 99).toFixed(1)) },
      probe_100_event_max_ms: { alone: Number(Math.max(...probesAlone).toFixed(1)), during: Number(Math.max(...probesDuring).toFixed(1)) },
    };
    console.log(`long read ${path}: ${JSON.stringify(result)}`);
    return result;
  }

  // Last, so that its rows do not weigh on the phases above. PostgreSQL alone (--store-alone): the same statement from bare clients, its JSON serialised before timing, so that
  // no Node work is left per row. Each pass over the templates writes under a new tenant id, so no id conflicts.
  if (opt['store-alone'] && STORE === 'postgres') {
    const texts = big.map((t) => JSON.stringify(fillRecords(t)));
    const sql = `${eventsInsertSql('$1', '$2', '$3')}`;
    for (const connections of [1, CONCURRENCY]) {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: connections });
      let i = 0;
      let tenantOfPass = uuidv7();
      const once = async () => {
        if (i % texts.length === 0) tenantOfPass = uuidv7();
        await pool.query(sql, [tenantOfPass, new Date(), texts[i++ % texts.length]]);
        return 1000;
      };
      await closedLoop(connections, WARMUP, once);
      const cpu = cpuMeter(server.pid!);
      const a = await closedLoop(connections, DURATION, once);
      console.log(`store alone, ${connections} connection(s): ${r0(a.events / a.seconds)} rows/s (${cpu()})`);
      await pool.end();
    }
  }
  /** The server stopped and started again, with its rollup job on or off. */
  async function restart(rollups: boolean) {
    server.removeAllListeners('exit');
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
    server = startServer(rollups);
    await waitReady();
  }
  // --rollups: the same load on a server whose rollup job runs at its default interval; the events sent so far are its backlog.
  const on = opt.rollups ? await rollupsPhase() : undefined;
  // Then the job off again, the same runs on the table as big as the rollups phase left it: the off runs above wrote
  // into a table that started empty (their rate falls run by run as it grows), so their median flatters "off".
  const offAfter = on ? await offAfterPhase(on.seconds) : undefined;
  // --alternate K (with --rollups): the job's cost measured on a table of about the same size on both sides. K runs with the
  // job on, each between two runs with it off (off, on, off, on, …, off), every run --alternate-duration seconds of the same
  // load; each on run against the mean of the two off runs around it (the table grows through all of them, so a drift with
  // its size weighs on both sides alike). An on run starts to count once the job has begun: its server first sends for
  // ROLLUP_INTERVAL_SECONDS + 5 s (the job's first run comes one interval after a start), uncounted. The job folds what the
  // off runs before it left, so an on run carries a backlog too: this errs against the job.
  const alternated = opt.rollups && Number(opt.alternate) > 0 ? await alternatePhase(Number(opt.alternate), Number(opt['alternate-duration'])) : undefined;
  async function alternatePhase(k: number, seconds: number) {
    const off: number[] = [],
      on: number[] = [];
    const interval = Number(process.env.ROLLUP_INTERVAL_SECONDS ?? 60);
    const one = async (name: string) => {
      const cpu = cpuMeter(server.pid!);
      const h = await closedLoop(CONCURRENCY, seconds, sendBig);
      counted += h.events;
      console.log(`${name}: http ${r0(h.events / h.seconds)} events/s (p99 ${pct(h.latencies, 99).toFixed(1)} ms per 1000-event batch; ${cpu()})`);
      return h.events / h.seconds;
    };
    for (let i = 0; ; i++) {
      await restart(false);
      off.push(await one(`alternate off ${i + 1}`));
      if (i === k) break;
      await restart(true);
      counted += (await closedLoop(CONCURRENCY, interval + 5, sendBig)).events; // until the job has begun
      on.push(await one(`alternate on ${i + 1}`));
    }
    const ratios = on.map((r, i) => r / ((off[i]! + off[i + 1]!) / 2));
    console.log(`alternate: on ÷ mean of the off runs around it ${ratios.map((x) => x.toFixed(3)).join(', ')} → median ${median(ratios).toFixed(3)}`);
    return { off, on, ratios };
  }
  async function offAfterPhase(seconds: number) {
    await restart(false);
    return bigRuns('off-after', seconds);
  }
  /** RUNS runs of `seconds` of 1000-event batches from CONCURRENCY senders: their rates. */
  async function bigRuns(name: string, seconds: number): Promise<number[]> {
    const rates: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const cpu = cpuMeter(server.pid!);
      const h = await closedLoop(CONCURRENCY, seconds, sendBig);
      counted += h.events;
      rates.push(h.events / h.seconds);
      console.log(`${name} run ${run}: http ${r0(h.events / h.seconds)} events/s (p99 ${pct(h.latencies, 99).toFixed(1)} ms per 1000-event batch; ${cpu()})`);
    }
    return rates;
  }
  async function foldedEvents(tenantId: string): Promise<number> {
    const db = STORE === 'postgres' ? raw : await openDb({ dataDir: join(tmp, 'server'), syncOnCommit: false });
    try {
      // Every event the bench sent (10M and more after --alternate): past the store's statement timeout, so none here, and on a
      // job connection (LOCKS.bench), which has no client-side query timeout (35M events outran it).
      const n = await db.tryWithLock(LOCKS.bench, (session) =>
        session.tx(async (q) => {
          await q.query("SELECT set_config('statement_timeout', '0', true)");
          const [row] = await q.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM events e, rollup_state s
            WHERE e.tenant_id = $1 AND e.ingest_xid < s.horizon AND e.ingest_xid <> ALL(coalesce(s.pending, '{}'))`,
            [tenantId],
          );
          return row!.n;
        }),
      );
      if (n === undefined) throw new Error('the bench lock for counting folded events is held');
      return n;
    } finally {
      if (db !== raw) await db.close();
    }
  }
  async function rollupsPhase() {
    await restart(true);
    const backlog = acked;
    const seconds = Number(opt['rollups-duration']) / RUNS;
    console.log(
      `rollups on (ROLLUP_INTERVAL_SECONDS=${process.env.ROLLUP_INTERVAL_SECONDS ?? 60}): ${RUNS} runs of ${seconds.toFixed(0)}s HTTP, the ${backlog} events sent so far as a backlog`,
    );
    const visible = async () => (await api<{ events: { total: number } }>('GET', '/v1/accounts/coverage', adminKey)).events.total;
    const stopLag = sampleLag(tracker, visible, () => acked);
    const stopProbe = probe(sendProbe);
    const rates = await bigRuns('rollups', seconds);
    const probes = await stopProbe();
    const samples = await stopLag();
    // Caught up: the first sample whose lag is younger than the phase, i.e. the backlog is visible.
    const caughtUp = samples.findIndex((x) => x.lag < x.at);
    const steady = caughtUp < 0 ? [] : samples.slice(caughtUp).map((x) => x.lag);
    return { rates, probes, steady, catchUp: caughtUp < 0 ? null : samples[caughtUp]!.at, backlog, seconds };
  }
  counted += probed;

  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kbOf = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  const shown = await api<{ usage: { events: number } }>('GET', `/admin/v1/tenants/${tenant.id}`, ADMIN_TOKEN);
  console.log(
    `server: VmRSS ${r0(kbOf('VmRSS') / 1024)} MB, VmHWM (peak) ${r0(kbOf('VmHWM') / 1024)} MB; access log lines ${accessLines}; acknowledged ${acked}, stored (usage counter) ${shown.usage.events}; responses carrying duplicates: ${duplicatesSeen}`,
  );
  if (shown.usage.events !== acked || counted !== acked || duplicatesSeen > 0)
    console.log(`WARNING: counted ${counted}, acknowledged ${acked} and stored ${shown.usage.events} should all agree, with no duplicates`);

  server.removeAllListeners('exit');
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  await exited;
  // --rollups: how many of the tenant's events the job folded while the server ran with it (the backlog and the phase's own),
  // read from the server's store once it has stopped: the drain rate, beside the lag the account views show.
  const folded = on && (await foldedEvents(tenant.id));
  if (on && folded !== undefined)
    console.log(
      `rollups: ${folded} of ${acked} events folded by the end of the phase (the job's first run ${process.env.ROLLUP_INTERVAL_SECONDS ?? 60} s into it)`,
    );
  // Database time to keep the read model current: a backlog of --backlog raw events, folded by one run of the job on the raw store.
  const fold = opt.rollups && Number(opt.backlog) > 0 ? await foldBacklog(raw, STORE === 'postgres', Number(opt.backlog), insertRaw) : undefined;
  if (fold) console.log(`fold of a ${fold.events}-event backlog: ${fold.seconds.toFixed(2)} s, ${fold.us_per_event} µs per event`);
  await raw.close();
  agent.destroy();
  rmSync(tmp, { recursive: true, force: true });

  const events = median(httpRates),
    rawRate = median(rawRates);
  console.log(
    `medians of ${RUNS}: http ${httpRates.map(r0).join(', ')} → ${r0(events)}; raw ${rawRates.map(r0).join(', ')} → ${r0(rawRate)}; p99 100-event ${p99s.map((p) => p.toFixed(1)).join(', ')} ms`,
  );
  const readModel = on && {
    events_per_s_rollups: r0(median(on.rates)),
    read_model_ratio: Number((median(on.rates) / events).toFixed(3)),
    ...(offAfter && {
      events_per_s_off_after: r0(median(offAfter)),
      read_model_ratio_off_after: Number((median(on.rates) / median(offAfter)).toFixed(3)),
    }),
    ...(alternated && {
      read_model_ratio_alternated: Number(median(alternated.ratios).toFixed(3)),
      read_model_ratios_alternated: alternated.ratios.map((x) => Number(x.toFixed(3))),
    }),
    read_model_lag_p99_s: on.steady.length ? Number(pct(on.steady, 99).toFixed(1)) : null,
    read_model_lag_max_s: on.steady.length ? Number(Math.max(...on.steady).toFixed(1)) : null,
    read_model_catch_up_s: on.catchUp === null ? null : Number(on.catchUp.toFixed(1)),
    probe_100_event_p99_ms: { off: Number(pct(probesOff, 99).toFixed(1)), on: Number(pct(on.probes, 99).toFixed(1)) },
    probe_100_event_max_ms: { off: Number(Math.max(...probesOff).toFixed(1)), on: Number(Math.max(...on.probes).toFixed(1)) },
    ...(slowSteps.size > 0 && {
      job_steps_over_250_ms: Object.fromEntries(
        [...slowSteps].map(([k, ms]) => [k, { n: ms.length, max_ms: Math.max(...ms), sum_ms: ms.reduce((a, b) => a + b, 0) }]),
      ),
    }),
    read_model_folded_events: folded,
    ...(fold && { fold_us_per_event: fold.us_per_event, fold_backlog_events: fold.events }),
  };
  if (on)
    console.log(
      `rollups: http ${on.rates.map(r0).join(', ')} → ${r0(median(on.rates))} vs ${r0(events)} off before, ${offAfter?.map(r0).join(', ')} → ${r0(median(offAfter ?? []))} off after; backlog ${on.backlog} visible after ${on.catchUp ?? 'never'} s; steady lag samples ${on.steady.map((x) => x.toFixed(0)).join(' ')}`,
    );
  console.log(
    JSON.stringify({
      store: STORE,
      events_per_s: r0(events),
      raw_insert_per_s: r0(rawRate),
      ratio: Number((events / rawRate).toFixed(3)),
      p99_ms_100_event_batch: Number(median(p99s).toFixed(1)),
      rss_mb: r0(kbOf('VmRSS') / 1024),
      rss_peak_mb: r0(kbOf('VmHWM') / 1024),
      rss_idle_mb: r0(idleRss),
      ...readModel,
      ...(longRead && { long_read: longRead }),
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  current?.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
  process.exit(1);
});
