// Measures the account rollups at scale on PostgreSQL: one tenant with 10M events (2,000 accounts, 5,000 licenses,
// 50,000 actors, 30 days, 20 versions) plus sessions and exceptions; the initial fold (not a target); then, RUNS times,
// one incremental refresh after 100,000 new events (target < 10 s) and the p50/p95/p99 of GET /v1/accounts/{id}
// (target p95 < 50 ms) and GET /v1/accounts over real HTTP (the real app listening on 127.0.0.1, same process).
// Usage: npm run bench:accounts -- [--events 10000000] [--new-events 100000] [--runs 3] [--drop]
//   DATABASE_URL (default postgres://postgres@127.0.0.1:5432/tally_bench_accounts) is dropped and recreated at the start;
//   --drop drops it again at the end (kept by default, for EXPLAIN). See docs/benchmarks.md.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createTenant } from '../src/admin/operations.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { mergePlans } from '../src/domain/plans.js';
import { windowStart } from '../src/jobs/rollups.js';
import { storeRollupJob } from '../src/jobs/all.js';
import { startJobs } from '../src/jobs/runner.js';
import { openDb, type Db, type LockedSession, type Queryable } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
import { runScript } from '../src/storage/script.mjs';
import { insertProduct } from '../src/storage/products.js';
import { encodeCursor } from '../src/storage/rows.js';
import { DERIVED_TABLES } from '../src/storage/read-model/tables.js';

const { values: opt } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    'new-events': { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
    drop: { type: 'boolean', default: false },
  },
});
const [EVENTS, NEW_EVENTS, RUNS] = [opt.events, opt['new-events'], opt.runs].map(Number) as [number, number, number];
const [ACCOUNTS, LICENSES, ACTORS, VERSIONS, CHUNK] = [2_000, 5_000, 50_000, 20, 1_000_000];
const SESSIONS_PER_EVENT = 0.02; // 200k sessions and 50k exceptions for 10M events; the new batches keep the ratios
const EXCEPTIONS_PER_EVENT = 0.005;
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/tally_bench_accounts';
const ADMIN_TOKEN = randomUUID();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const r1 = (n: number) => Math.round(n * 10) / 10;
const r2 = (n: number) => Math.round(n * 100) / 100;
const secs = (t0: number) => (performance.now() - t0) / 1000;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const shuffle = <T>(xs: T[]) =>
  xs
    .map((x) => [Math.random(), x] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([, x]) => x);

// ---- A clean database: dropped and recreated, then migrated by the real code.
async function admin(sql: string): Promise<void> {
  const url = new URL(DATABASE_URL);
  url.pathname = '/postgres';
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  await c.query(sql);
  await c.end();
}
const dbName = () => `"${decodeURIComponent(new URL(DATABASE_URL).pathname.slice(1)).replaceAll('"', '""')}"`;

// ---- Data, set-based in PostgreSQL. Accounts: skewed by their number of actors (the biggest has ~5% of them).
// Licenses: one per account, the other 3,000 mostly on the big accounts. Actors: one account, one of its licenses;
// activity skewed (a few actors send much more). Versions follow time (a release every ~1.5 days, 4 in use at once).
// 40 (category, name) pairs, skewed. 10% of events without account (and license), 10% more without license.
const CATEGORIES = ['app', 'ui', 'editor', 'export', 'search', 'sync', 'report', 'settings'];
const VERBS = ['opened', 'clicked', 'saved', 'completed', 'failed'];
const PAIRS = CATEGORIES.flatMap((c) => VERBS.map((v) => [c, `${c}_${v}`]));

async function setupDimensions(gen: pg.Client): Promise<void> {
  await gen.query(`CREATE TEMP TABLE b_licenses AS
    SELECT l, 'lic_' || lpad(l::text, 5, '0') AS license_id,
           CASE WHEN l <= ${ACCOUNTS} THEN l ELSE 1 + floor(${ACCOUNTS} * power(random(), 2.5))::int END AS account
      FROM generate_series(1, ${LICENSES}) l`);
  await gen.query(`CREATE TEMP TABLE b_account_licenses AS
    SELECT account, license_id, row_number() OVER (PARTITION BY account ORDER BY l) AS k, count(*) OVER (PARTITION BY account) AS n FROM b_licenses`);
  await gen.query(`CREATE TEMP TABLE b_actors AS
    SELECT a.i, 'user-' || lpad(a.i::text, 5, '0') AS actor_id, 'acct_' || lpad(a.account::text, 4, '0') AS account_id, al.license_id
      FROM (SELECT i, 1 + floor(${ACCOUNTS} * power(random(), 2.5))::int AS account, random() AS r FROM generate_series(1, ${ACTORS}) i) a
      JOIN (SELECT account, n FROM b_account_licenses WHERE k = 1) c ON c.account = a.account
      JOIN b_account_licenses al ON al.account = a.account AND al.k = 1 + floor(a.r * c.n)::int`);
  await gen.query(
    'CREATE TEMP TABLE b_pairs AS SELECT (ord - 1)::int AS i, c AS category, n AS name FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(c, n, ord)',
    [PAIRS.map((p) => p[0]), PAIRS.map((p) => p[1])],
  );
  for (const t of ['b_actors', 'b_pairs']) await gen.query(`ALTER TABLE ${t} ADD PRIMARY KEY (i); ANALYZE ${t}`);
}

/** The common part of every generated row: an actor (skewed), a time in [lo, hi), its version, account and license. */
const base = (n: number) => `SELECT r.*, a.actor_id,
        (array[${Array.from({ length: VERSIONS }, (_, v) => `'5.${v}.0'`).join(',')}])[1 + least(${VERSIONS - 1}, floor(extract(epoch FROM ts - $5::timestamptz) / extract(epoch FROM $4::timestamptz - $5::timestamptz) * 16 + r.rv * 4))::int] AS version,
        CASE WHEN r.ra < 0.1 THEN NULL ELSE a.account_id END AS account_id, CASE WHEN r.ra < 0.2 THEN NULL ELSE a.license_id END AS license_id
   FROM (SELECT 1 + floor(${ACTORS} * power(random(), 1.6))::int AS ai, random() AS rv, random() AS ra, random() AS rx, random() AS ry,
                $3::timestamptz + random() * ($4::timestamptz - $3::timestamptz) AS ts FROM generate_series(1, ${n})) r
   JOIN b_actors a ON a.i = r.ai`;

async function generate(gen: pg.Client, tenant: string, product: string, lo: Date, hi: Date, wstart: Date, events: number): Promise<void> {
  const p = [tenant, product, lo, hi, wstart];
  for (let done = 0; done < events;) {
    const n = Math.min(CHUNK, events - done);
    await gen.query(
      `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, account_id, license_id, properties)
       SELECT $1, gen_random_uuid(), $2, g.version, pr.category, pr.name, g.ts, g.ts + interval '2 seconds', g.actor_id, g.account_id, g.license_id,
              jsonb_build_object('screen', (array['home','settings','editor','billing','reports'])[1 + floor(g.ry * 5)::int], 'duration_ms', floor(g.ry * 5000)::int)
         FROM (${base(n)}) g JOIN b_pairs pr ON pr.i = floor(${PAIRS.length} * power(g.rx, 2))::int`,
      p,
    );
    done += n;
    if (events >= CHUNK) console.log(`  events: ${done.toLocaleString('en')} / ${events.toLocaleString('en')}`);
  }
  const sessions = Math.round(events * SESSIONS_PER_EVENT),
    exceptions = Math.round(events * EXCEPTIONS_PER_EVENT);
  await gen.query(
    `INSERT INTO sessions (tenant_id, session_id, product_id, product_version, actor_id, account_id, license_id, started_at, last_seen_at, ended_at, end_reason, received_at)
     SELECT $1, gen_random_uuid()::text, $2, g.version, g.actor_id, g.account_id, g.license_id, g.ts, g.ts + g.rx * interval '1 hour',
            g.ts + g.rx * interval '1 hour', 'normal', g.ts FROM (${base(sessions)}) g`,
    p,
  );
  await gen.query(
    `INSERT INTO exceptions (tenant_id, exception_id, product_id, product_version, exception_type, severity, occurred_at, received_at, actor_id, message, stack_trace, account_id, license_id, fingerprint)
     SELECT $1, gen_random_uuid()::text, $2, g.version, (array['TypeError','RangeError','IOError','TimeoutError'])[1 + floor(g.rx * 4)::int],
            CASE WHEN g.ry < 0.1 THEN 'fatal' ELSE 'non_fatal' END, g.ts, g.ts, g.actor_id, 'boom ' || floor(g.rx * 1000),
            'Error: boom\n    at save (app.js:' || floor(g.rx * 300) || ':5)', g.account_id, g.license_id, 'fp_' || floor(300 * power(g.rx, 2))::int
       FROM (${base(exceptions)}) g`,
    p,
  );
}

// ---- The job's statements, timed: the runner's own path (startJobs(...).runOnce) over a db whose locked client is wrapped.
type Timing = { sql: string; ms: number };
const wrap = (q: Queryable, log: Timing[]): Queryable => ({
  query: async (sql, params) => {
    const t0 = performance.now();
    try {
      return await q.query(sql, params);
    } finally {
      log.push({ sql: sql.replace(/\s+/g, ' ').slice(0, 90), ms: performance.now() - t0 });
    }
  },
  exec: (sql) => q.exec(sql),
});
const wrapSession = (s: LockedSession, log: Timing[]): LockedSession => ({
  ...wrap(s, log),
  tx: (fn) => s.tx((q) => fn(wrap(q, log))),
  // What PostgreSQL's script is (postgres.ts), with each statement timed.
  async script(statements) {
    const t0 = performance.now();
    const rows = await s.tx((q) => runScript((sql, params) => wrap(q, log).query(sql, params), statements));
    return { rows, ms: performance.now() - t0 };
  },
});
const timed = (db: Db, log: Timing[]): Db => ({ ...db, tryWithLock: (key, fn) => db.tryWithLock(key, (s) => fn(wrapSession(s, log))) });
/** The n largest of rows by time, one line each. */
const largest = (rows: { ms: number; label: string }[], n: number) =>
  [...rows]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n)
    .map((r) => `    ${(r.ms / 1000).toFixed(2)} s  ${r.label}`)
    .join('\n');
const slowest = (log: Timing[]) =>
  largest(
    log.map((t) => ({ ms: t.ms, label: t.sql })),
    4,
  );
/** The job's time by kind of statement (its first words), largest first: where a run's time went, not only its slowest statements. */
const byKind = (log: Timing[]) => {
  const kinds = new Map<string, { ms: number; n: number }>();
  for (const t of log) {
    const k = t.sql.trim().slice(0, 60);
    const e = kinds.get(k) ?? { ms: 0, n: 0 };
    kinds.set(k, { ms: e.ms + t.ms, n: e.n + 1 });
  }
  return largest(
    [...kinds].map(([k, e]) => ({ ms: e.ms, label: `in ${e.n}: ${k}` })),
    10,
  );
};
const errors: unknown[] = [];
const warnLog = { warn: (o: { err: unknown }) => errors.push(o.err), info() {}, error() {} } as never;

/**
 * One runOnce('rollups'), timed, with its slowest statements. The job runs on the store's job
 * connections, which have no client-side query timeout, and its transactions lift the statement
 * timeout, so a failure is a real one: it ends the benchmark.
 */
async function refresh(db: Db, label: string): Promise<number> {
  const log: Timing[] = [];
  const jobs = startJobs(timed(db, log), [storeRollupJob(60, true)], warnLog);
  const t0 = performance.now();
  const ok = await jobs.runOnce('rollups');
  const s = secs(t0);
  await jobs.stop();
  console.log(`${label}: ${ok ? 'ok' : 'FAILED'} in ${s.toFixed(2)} s (load ${load()}); slowest statements:\n${slowest(log)}\n  by kind:\n${byKind(log)}`);
  if (!ok) throw new Error(`${label}: the rollup job failed`, { cause: errors.pop() });
  return s;
}

// ---- HTTP: the real app, listening; one keep-alive socket, requests one after another.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function get(port: number, key: string, path: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get({ agent, host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`GET ${path}: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}
const stats = (xs: number[]) => ({ p50: r1(pct(xs, 50)), p95: r1(pct(xs, 95)), p99: r1(pct(xs, 99)), max: r1(Math.max(...xs)) });

async function main(): Promise<void> {
  console.log(`load ${load()}; ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)!.length} cpus; database ${dbName()} recreated`);
  await admin(`DROP DATABASE IF EXISTS ${dbName()} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${dbName()}`);
  const db = await openDb({ databaseUrl: DATABASE_URL, poolSize: 8 });
  await migrate(db);
  const config = loadConfig({ ADMIN_TOKEN, DATABASE_URL, LOG_LEVEL: 'warn', MAX_EVENT_LOOP_DELAY_MS: '0' }); // no load shedding: latency is what is measured
  const plans = mergePlans({ enterprise: { requests_per_minute: 1_000_000 } });
  const app = await buildApp({ config, db, plans });
  const { tenant, api_keys } = await createTenant({ db, plans, trialDays: config.trialDays, settings: config }, { name: 'bench', plan: 'enterprise' });
  const product = (await insertProduct(db, tenant.id, 'desktop-app', 'Desktop app'))!;
  const key = api_keys.find((k) => k.permissions.includes('view_accounts'))!.key;
  const gen = new pg.Client({ connectionString: DATABASE_URL });
  await gen.connect();
  const settings = (
    await gen.query<{ v: string }>(
      "SELECT concat_ws(', ', current_setting('server_version'), 'shared_buffers ' || current_setting('shared_buffers'), 'work_mem ' || current_setting('work_mem'), 'jit ' || current_setting('jit')) AS v",
    )
  ).rows[0]!.v;

  const now = new Date();
  const wstart = new Date(`${windowStart(now)}T00:00:00Z`);
  console.log(`PostgreSQL ${settings}; generating ${EVENTS.toLocaleString('en')} events from ${wstart.toISOString()} to now`);
  let t0 = performance.now();
  await setupDimensions(gen);
  await generate(gen, tenant.id, product.id, wstart, now, wstart, EVENTS);
  const generateS = secs(t0);
  // What autovacuum does to insert-only tables in production: visibility map, statistics, and the BRIN ranges summarized.
  t0 = performance.now();
  await gen.query('VACUUM (ANALYZE) events, sessions, exceptions');
  const sizes = (
    await gen.query(
      "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class WHERE relname IN ('events', 'sessions', 'exceptions') ORDER BY 1",
    )
  ).rows;
  console.log(`generated in ${generateS.toFixed(0)} s, vacuum analyze ${secs(t0).toFixed(0)} s; ${sizes.map((r) => `${r.relname} ${r.size}`).join(', ')}`);

  const initial = await refresh(db, 'initial fold');
  await gen.query(`ANALYZE ${[...DERIVED_TABLES, 'ru_accounts', 'ru_licenses'].join(', ')}`);
  const facts = (
    await gen.query(
      "SELECT relname, n_live_tup::int AS n, pg_size_pretty(pg_total_relation_size(relid)) AS size FROM pg_stat_user_tables WHERE relname ~ '^(ru|rm)_' ORDER BY 1",
    )
  ).rows;
  console.log(`facts: ${facts.map((r) => `${r.relname} ${r.n.toLocaleString('en')} rows (${r.size})`).join(', ')}`);

  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const accounts = (
    await gen.query<{ account_id: string; events: number }>('SELECT account_id, events FROM ru_accounts WHERE tenant_id = $1 ORDER BY events DESC', [tenant.id])
  ).rows;
  if (accounts.length === 0) throw new Error('no accounts after the initial fold');
  const sample = shuffle(accounts)
    .slice(0, 200)
    .map((a) => a.account_id);
  const biggest = accounts[0]!.account_id;

  const runs: { refresh: number; overview: ReturnType<typeof stats>; list: ReturnType<typeof stats>; biggest: number }[] = [];
  for (let run = 1; run <= RUNS; run++) {
    const t = new Date();
    await generate(gen, tenant.id, product.id, new Date(t.getTime() - 10 * 60_000), t, wstart, NEW_EVENTS);
    const r = await refresh(db, `run ${run}: incremental refresh after ${NEW_EVENTS.toLocaleString('en')} new events`);
    for (const id of sample.slice(0, 50)) await get(port, key, `/v1/accounts/${encodeURIComponent(id)}`); // warm-up
    const overview: number[] = [];
    for (const id of shuffle(Array.from({ length: 5 }, () => sample).flat())) overview.push(await get(port, key, `/v1/accounts/${encodeURIComponent(id)}`));
    const big: number[] = [];
    for (let i = 0; i < 20; i++) big.push(await get(port, key, `/v1/accounts/${encodeURIComponent(biggest)}`));
    const list: number[] = [];
    for (let i = 0; i < 500; i++) {
      const after = i % 2 === 0 ? undefined : accounts[Math.floor(Math.random() * accounts.length)]!.account_id;
      list.push(await get(port, key, `/v1/accounts${after ? `?cursor=${encodeCursor([after])}` : ''}`));
    }
    runs.push({ refresh: r, overview: stats(overview), list: stats(list), biggest: r1(median(big)) });
    console.log(
      `run ${run}: overview (1000 requests, 200 accounts) ${JSON.stringify(stats(overview))} ms; biggest account (${biggest}, ${accounts[0]!.events.toLocaleString('en')} events) median ${r1(median(big))} ms; list (500 requests) ${JSON.stringify(stats(list))} ms; load ${load()}`,
    );
  }

  const status = readFileSync('/proc/self/status', 'utf8');
  const mb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024);
  console.log(`bench process (app + generator client): VmRSS ${mb('VmRSS')} MB, VmHWM ${mb('VmHWM')} MB; load ${load()}`);
  agent.destroy();
  await app.close();
  await gen.end();
  await db.close();
  if (opt.drop) await admin(`DROP DATABASE ${dbName()}`);
  const m = (f: (r: (typeof runs)[number]) => number) => r2(median(runs.map(f)));
  console.log(
    `medians of ${RUNS}: refresh ${runs.map((r) => r.refresh.toFixed(2)).join(', ')} s; overview p95 ${runs.map((r) => r.overview.p95).join(', ')} ms; list p95 ${runs.map((r) => r.list.p95).join(', ')} ms`,
  );
  console.log(
    JSON.stringify({
      store: 'postgres',
      events: EVENTS,
      initial_fold_s: r2(initial),
      incremental_refresh_s: m((r) => r.refresh),
      overview_p95_ms: m((r) => r.overview.p95),
      overview_biggest_account_ms: m((r) => r.biggest),
      list_p95_ms: m((r) => r.list.p95),
      rss_mb: mb('VmRSS'),
      load_1m: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
