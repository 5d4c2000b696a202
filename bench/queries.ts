// Measures the reports on PostgreSQL: one tenant with N events over 30 days (2,000 accounts, 50,000 actors, 20 versions,
// 40 event names, environments for every actor), sessions and exceptions, folded once by the real rollup job; then, per
// report, the p95 of REQUESTS varied requests (random ranges, time zones, intervals, filters, breakdowns) over real HTTP,
// the explorer's first page, the behaviour queries (a 5-step funnel over 30 days, a 12-week retention matrix, a saved
// segment's size, paths: names drawn at random), and a CSV export of every event with the server's RSS growth (same process).
// The data generator is bench/accounts.ts's (copied: that file runs on import). See docs/benchmarks.md, "Queries".
// Usage: npm run bench:queries -- [--events 1000000] [--requests 200] [--reuse] [--refold] [--only trends,versions] [--no-export] [--pg-defaults] [--workers 1] [--drop]
//   DATABASE_URL (default postgres://postgres@127.0.0.1:5432/tally_bench_queries) is dropped and recreated at the start,
//   unless --reuse finds a fixture of the same size there (bench_fixture): then generation and the fold are skipped.
//   --refold (with --reuse) empties the read model and folds the events again (after a change to the fold or migrations).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createTenant } from '../src/admin/operations.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { mergePlans } from '../src/domain/plans.js';
import { storeRollupJob } from '../src/jobs/all.js';
import { startJobs } from '../src/jobs/runner.js';
import { openDb } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
import { insertProduct } from '../src/storage/products.js';
import { DERIVED_TABLES } from '../src/storage/read-model/tables.js';

const { values: opt } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    requests: { type: 'string', default: '200' },
    drop: { type: 'boolean', default: false },
    reuse: { type: 'boolean', default: false },
    refold: { type: 'boolean', default: false },
    only: { type: 'string' },
    'no-export': { type: 'boolean', default: false },
    'pg-defaults': { type: 'boolean', default: false },
    workers: { type: 'string', default: '1' },
  },
});
const [EVENTS, REQUESTS] = [Number(opt.events), Number(opt.requests)];
if (!/^\d+$/.test(opt.workers)) throw new Error('--workers: a whole number of parallel workers per statement');
const [ACCOUNTS, LICENSES, ACTORS, VERSIONS, CHUNK] = [2_000, 5_000, 50_000, 20, 1_000_000];
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/tally_bench_queries';
const ADMIN_TOKEN = randomUUID();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const r1 = (n: number) => Math.round(n * 10) / 10;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

async function admin(sql: string): Promise<void> {
  const url = new URL(DATABASE_URL);
  url.pathname = '/postgres';
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  await c.query(sql);
  await c.end();
}
const dbName = () => `"${decodeURIComponent(new URL(DATABASE_URL).pathname.slice(1)).replaceAll('"', '""')}"`;

const CATEGORIES = ['app', 'ui', 'editor', 'export', 'search', 'sync', 'report', 'settings'];
const VERBS = ['opened', 'clicked', 'saved', 'completed', 'failed'];
const PAIRS = CATEGORIES.flatMap((c) => VERBS.map((v) => [c, `${c}_${v}`]));

async function setupDimensions(gen: pg.Client): Promise<void> {
  await gen.query(`CREATE TEMP TABLE b_licenses AS
    SELECT l, 'lic_' || lpad(l::text, 5, '0') AS license_id, CASE WHEN l <= ${ACCOUNTS} THEN l ELSE 1 + floor(${ACCOUNTS} * power(random(), 2.5))::int END AS account
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

const base = (n: number) => `SELECT r.*, a.actor_id,
        (array[${Array.from({ length: VERSIONS }, (_, v) => `'5.${v}.0'`).join(',')}])[1 + least(${VERSIONS - 1}, floor(extract(epoch FROM ts - $3::timestamptz) / extract(epoch FROM $4::timestamptz - $3::timestamptz) * 16 + r.rv * 4))::int] AS version,
        CASE WHEN r.ra < 0.1 THEN NULL ELSE a.account_id END AS account_id, CASE WHEN r.ra < 0.2 THEN NULL ELSE a.license_id END AS license_id
   FROM (SELECT 1 + floor(${ACTORS} * power(random(), 1.6))::int AS ai, random() AS rv, random() AS ra, random() AS rx, random() AS ry,
                $3::timestamptz + random() * ($4::timestamptz - $3::timestamptz) AS ts FROM generate_series(1, ${n})) r
   JOIN b_actors a ON a.i = r.ai`;

async function generate(gen: pg.Client, tenant: string, product: string, lo: Date, hi: Date): Promise<void> {
  const p = [tenant, product, lo, hi];
  for (let done = 0; done < EVENTS; done += CHUNK) {
    await gen.query(
      `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, account_id, license_id, properties)
       SELECT $1, gen_random_uuid(), $2, g.version, pr.category, pr.name, g.ts, g.ts + interval '2 seconds', g.actor_id, g.account_id, g.license_id,
              jsonb_build_object('screen', (array['home','settings','editor','billing','reports'])[1 + floor(g.ry * 5)::int])
         FROM (${base(Math.min(CHUNK, EVENTS - done))}) g JOIN b_pairs pr ON pr.i = floor(${PAIRS.length} * power(g.rx, 2))::int`,
      p,
    );
    console.log(`  events: ${Math.min(EVENTS, done + CHUNK).toLocaleString('en')}`);
  }
  // The versions as ingest registers them (auto, first and last seen), the four oldest archived: the versions report's upgrade
  // lag and archived accounts read them.
  await gen.query(
    `INSERT INTO product_versions (id, tenant_id, product_id, version, source, first_seen, last_seen, status)
     SELECT gen_random_uuid(), $1, $2, product_version, 'auto', min(occurred_at), max(occurred_at),
            CASE WHEN product_version IN ('5.0.0', '5.1.0', '5.2.0', '5.3.0') THEN 'archived' ELSE 'active' END
       FROM events WHERE tenant_id = $1 GROUP BY product_version`,
    [tenant, product],
  );
  await gen.query(
    `INSERT INTO sessions (tenant_id, session_id, product_id, product_version, actor_id, account_id, license_id, started_at, last_seen_at, ended_at, end_reason, received_at)
     SELECT $1, gen_random_uuid()::text, $2, g.version, g.actor_id, g.account_id, g.license_id, g.ts, g.ts + g.rx * interval '1 hour',
            g.ts + g.rx * interval '1 hour', CASE WHEN g.ry < 0.05 THEN 'timeout' ELSE 'normal' END, g.ts FROM (${base(Math.round(EVENTS * 0.02))}) g`,
    p,
  );
  await gen.query(
    `INSERT INTO exceptions (tenant_id, exception_id, product_id, product_version, exception_type, severity, occurred_at, received_at, actor_id, message, account_id, license_id, fingerprint)
     SELECT $1, gen_random_uuid()::text, $2, g.version, 'TypeError', CASE WHEN g.ry < 0.1 THEN 'fatal' ELSE 'non_fatal' END, g.ts, g.ts, g.actor_id, 'boom',
            g.account_id, g.license_id, 'fp_' || floor(300 * power(g.rx, 2))::int FROM (${base(Math.round(EVENTS * 0.005))}) g`,
    p,
  );
  await gen.query(
    `INSERT INTO environments (tenant_id, actor_id, session_id, data, received_at)
     SELECT $1, actor_id, '', jsonb_build_object('os_name', (array['Windows','macOS','Linux','iOS','Android'])[1 + i % 5], 'os_version', (10 + i % 4)::text,
            'runtime_name', (array['node','browser','dotnet'])[1 + i % 3], 'locale', (array['en-US','de-DE','fr-FR','ja-JP'])[1 + i % 4], 'screen', jsonb_build_object('width', 1920, 'height', 1080)), now()
       FROM b_actors`,
    [tenant],
  );
}

const failures: string[] = [];
/** The `source` of the last JSON answer (read_model or events), where the report says. */
let lastSource = 'n/a';
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
/** A request: a GET of a path, or a POST of a JSON body (funnels, retention, segments). */
type Req = string | { path: string; body: unknown };
function send(port: number, key: string, req: Req, accept = 'application/json', onChunk?: (c: Buffer) => void): Promise<number> {
  const t0 = performance.now();
  const [path, body] = typeof req === 'string' ? [req, undefined] : [req.path, JSON.stringify(req.body)];
  const headers = { authorization: `Bearer ${key}`, accept, ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
  return new Promise((resolve, reject) => {
    http
      .request({ agent, host: '127.0.0.1', port, path, method: body === undefined ? 'GET' : 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (res.statusCode === 200 && onChunk ? onChunk(c) : (text += c)));
        res.on('end', () => {
          if (res.statusCode === 200 && !onChunk) lastSource = /"source":"(\w+)"/.exec(text)?.[1] ?? 'n/a';
          if (res.statusCode !== 200) failures.push(`${res.statusCode} ${path} ${text.slice(0, 120)}`);
          if (res.statusCode === 200 || res.statusCode === 422) resolve(performance.now() - t0);
          else reject(new Error(`${body === undefined ? 'GET' : 'POST'} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
        });
      })
      .on('error', reject)
      .end(body);
  });
}

/** A varied request: range, time zone, interval, and one filter. */
function common(): string {
  const range = pick([
    'range=7d',
    'range=30d',
    'range=month',
    'range=14d',
    `from=${new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 10)}&to=${new Date(Date.now() - 5 * 86_400_000).toISOString().slice(0, 10)}`,
  ]);
  const tz = pick(['UTC', 'UTC', 'America/New_York', 'Europe/Berlin']);
  return `${range}&tz=${encodeURIComponent(tz)}&interval=${pick(['day', 'day', 'week'])}`;
}
const filter = (events: boolean) =>
  pick([
    '',
    '',
    `&product=desktop-app&version=5.${Math.floor(Math.random() * VERSIONS)}.0`,
    `&account_id=acct_000${1 + Math.floor(Math.random() * 9)}`,
    ...(events ? [`&name=${pick(PAIRS)[1]}`, '&property=screen:home'] : []),
  ]);

const RM_TABLES = [...DERIVED_TABLES, 'rm_compaction_due'].join(', ');

/** The fixture kept by an earlier run (--reuse): its tenant's key, if it has the same size. */
async function existing(): Promise<{ key: string } | undefined> {
  const c = new pg.Client({ connectionString: DATABASE_URL });
  try {
    await c.connect();
  } catch {
    return undefined;
  }
  try {
    const r = await c.query<{ key: string }>('SELECT key FROM bench_fixture WHERE events = $1', [EVENTS]);
    return r.rows[0];
  } catch {
    return undefined;
  } finally {
    await c.end();
  }
}

async function fold(db: Awaited<ReturnType<typeof openDb>>, gen: pg.Client): Promise<void> {
  const t0 = performance.now();
  // Every step of the job's run (slowStepMs 1 ms: each one is reported), its seconds summed by kind (a day's compaction as one kind).
  const kinds = new Map<string, number>();
  const watch = (o: { step?: string; ms?: number }, ...rest: unknown[]) => {
    if (!o.step || o.ms === undefined) return console.warn(o, ...rest);
    const kind = o.step.replace(/ \d{4}-\d\d-\d\d$/, '');
    kinds.set(kind, (kinds.get(kind) ?? 0) + o.ms);
  };
  const jobs = startJobs(db, [storeRollupJob(60, true, { slowStepMs: 1 })], { warn: watch, info() {}, error: console.error } as never);
  if (!(await jobs.runOnce('rollups'))) throw new Error('the fold failed');
  await jobs.stop();
  const run = (performance.now() - t0) / 1000;
  await gen.query(`VACUUM (ANALYZE) ${RM_TABLES}, rm_actor_ordinals`);
  const steps = [...kinds].sort((a, b) => b[1] - a[1]).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(0)} s`);
  console.log(`folded in ${run.toFixed(0)} s by one run of the job (${steps.join(', ')}), then VACUUM (ANALYZE); load ${load()}`);
}

async function main(): Promise<void> {
  const kept = opt.reuse ? await existing() : undefined;
  console.log(`load ${load()}; database ${dbName()} ${kept ? 'reused' : 'recreated'}; ${EVENTS.toLocaleString('en')} events`);
  if (!kept) {
    await admin(`DROP DATABASE IF EXISTS ${dbName()} WITH (FORCE)`);
    await admin(`CREATE DATABASE ${dbName()}`);
  }
  // The server settings of an analytics database on a small machine: sorts and hashes of a few
  // hundred thousand actor-days in memory, and one parallel worker per statement (--workers): a
  // report that filters raw events by a property scans them on both cores, about twice as fast,
  // and the read model's short statements are no slower (docs/benchmarks.md). --pg-defaults keeps 4MB / 2.
  if (!opt['pg-defaults'])
    await admin(`ALTER DATABASE ${dbName()} SET work_mem = '64MB'; ALTER DATABASE ${dbName()} SET max_parallel_workers_per_gather = ${Number(opt.workers)}`);
  else await admin(`ALTER DATABASE ${dbName()} RESET work_mem; ALTER DATABASE ${dbName()} RESET max_parallel_workers_per_gather`);
  const db = await openDb({ databaseUrl: DATABASE_URL, poolSize: 8 });
  await migrate(db);
  const config = loadConfig({ ADMIN_TOKEN, DATABASE_URL, LOG_LEVEL: 'warn', MAX_EVENT_LOOP_DELAY_MS: '0' });
  const plans = mergePlans({ enterprise: { requests_per_minute: 1_000_000 } });
  const app = await buildApp({ config, db, plans });
  const gen = new pg.Client({ connectionString: DATABASE_URL });
  await gen.connect();
  let key: string;
  if (kept) {
    key = kept.key;
    if (opt.refold) {
      await gen.query(`TRUNCATE ${RM_TABLES}; UPDATE rollup_state SET horizon = 0, pending = '{}'`);
      await fold(db, gen);
    } else await fold(db, gen); // a run of the job (what a migration left it to build: release health's sets), then VACUUM (ANALYZE)
  } else {
    const { tenant, api_keys } = await createTenant({ db, plans, trialDays: config.trialDays, settings: config }, { name: 'bench', plan: 'enterprise' });
    const product = (await insertProduct(db, tenant.id, 'desktop-app', 'Desktop app'))!;
    key = api_keys.find((k) => k.permissions.includes('view_accounts'))!.key;
    const now = new Date();
    const t0 = performance.now();
    await setupDimensions(gen);
    await generate(gen, tenant.id, product.id, new Date(now.getTime() - 30 * 86_400_000), now);
    await gen.query('VACUUM (ANALYZE) events, sessions, exceptions, environments');
    console.log(`generated and vacuumed in ${((performance.now() - t0) / 1000).toFixed(0)} s; load ${load()}`);
    await fold(db, gen);
    await gen.query('CREATE TABLE bench_fixture (events bigint, key text, generated_at timestamptz)');
    await gen.query('INSERT INTO bench_fixture VALUES ($1, $2, $3)', [EVENTS, key, now]);
  }

  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const fingerprint = 'fp_1';
  const only = opt.only?.split(',');
  // Saved segments for segment_size (did one of the names at least N times), deleted at the end.
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const segments: string[] = [];
  for (let i = 0; i < (only && !only.includes('segment_size') ? 0 : 5); i++) {
    const [category, name] = pick(PAIRS);
    const definition = { range: pick(['7d', '30d']), did: [{ category, name, min_count: pick([1, 5, 20]) }] };
    const res = await app.inject({ method: 'POST', url: '/v1/segments', headers, payload: JSON.stringify({ name: `bench ${i}`, definition }) });
    segments.push(res.json<{ id: string }>().id);
  }
  const names = (n: number) => [...PAIRS].sort(() => Math.random() - 0.5).slice(0, n);
  const tz = () => pick(['UTC', 'UTC', 'America/New_York', 'Europe/Berlin']);
  const reports: Record<string, () => Req> = {
    trends: () =>
      `/v1/reports/trends?${common()}${filter(true)}${pick(['', '&breakdown=name', '&breakdown=version', '&breakdown=account', '&breakdown=os', '&breakdown=property:screen'])}`,
    active_actors: () => `/v1/reports/active-actors?${common()}${filter(true)}`,
    versions: () => `/v1/reports/versions?product=desktop-app&${common()}${filter(false).replace(/&product=[^&]*&version=[^&]*/, '')}`,
    accounts: () => `/v1/reports/accounts?${common()}${filter(true)}`,
    sessions: () => `/v1/sessions?${common().replace(/&interval=\w+/, '')}${filter(false)}`,
    sessions_stats: () => `/v1/sessions/stats?${common()}${filter(false)}`,
    release_health: () => `/v1/sessions/release-health?${common()}${filter(false)}`,
    environment: () => `/v1/environment/${pick(['os', 'locale', 'runtime', 'screen'])}?${common()}${filter(false)}`,
    exception_trend: () => `/v1/exceptions/${fingerprint}?${common()}${filter(false)}`,
    events_first_page: () => `/v1/events?${common().replace(/&interval=\w+/, '')}${filter(true)}`,
    // The behaviour queries (docs/behaviour.md), on the fixture's 40 names drawn at random.
    funnel_5_steps: () => ({
      path: '/v1/funnels',
      body: {
        product: 'desktop-app',
        range: '30d',
        tz: tz(),
        steps: names(5).map(([category, name]) => ({ category, name })),
        window: { value: pick([1, 7, 14]), unit: 'day' },
      },
    }),
    retention_12_weeks: () => {
      const start = pick([undefined, ...names(3)]);
      return {
        path: '/v1/retention',
        body: {
          product: 'desktop-app',
          range: '84d',
          tz: tz(),
          period: 'week',
          periods: 12,
          ...(start && { start_event: { category: start[0], name: start[1] } }),
        },
      };
    },
    segment_size: () => `/v1/segments/${pick(segments)}/size`,
    paths: () => {
      const [category, name] = pick(PAIRS);
      return `/v1/paths?product=desktop-app&range=${pick(['7d', '30d'])}&tz=${encodeURIComponent(tz())}&category=${category}&name=${name}&steps=3&limit=10`;
    },
  };
  const p95: Record<string, number> = {};
  for (const [name, url] of Object.entries(reports)) {
    if (only && !only.includes(name)) continue;
    for (let i = 0; i < 5; i++) await send(port, key, url()); // warm-up
    const times: number[] = [];
    const bySource = new Map<string, number[]>();
    const slow: [number, Req][] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const path = url();
      lastSource = 'n/a';
      const ms = await send(port, key, path);
      times.push(ms);
      bySource.set(lastSource, [...(bySource.get(lastSource) ?? []), ms]);
      slow.push([ms, path]);
    }
    p95[name] = r1(pct(times, 95));
    const sources = [...bySource].map(([k, xs]) => `${k}: ${xs.length} requests, p50 ${r1(pct(xs, 50))} ms, p95 ${r1(pct(xs, 95))} ms`).join('; ');
    console.log(
      `${name}: p50 ${r1(pct(times, 50))} ms, p95 ${p95[name]} ms, max ${r1(Math.max(...times))} ms (${REQUESTS} requests, ${failures.length} answered 422 so far; load ${load()})`,
    );
    if (bySource.size > 1 || !bySource.has('n/a')) console.log(`  by source: ${sources}`);
    for (const [ms, req] of slow.sort((a, b) => b[0] - a[0]).slice(0, 3)) {
      console.log(`  slowest: ${r1(ms)} ms ${typeof req === 'string' ? req : `POST ${req.path} ${JSON.stringify(req.body)}`}`);
    }
  }

  // The export: every event of the 30 days as CSV, the server's RSS (and heap) sampled while it streams.
  let growth: number | null = null;
  if (!opt['no-export']) {
    globalThis.gc?.();
    const rss0 = process.memoryUsage().rss;
    const heap0 = process.memoryUsage().heapUsed;
    let [peak, heapPeak] = [rss0, heap0];
    const sample = setInterval(() => {
      const m = process.memoryUsage();
      [peak, heapPeak] = [Math.max(peak, m.rss), Math.max(heapPeak, m.heapUsed)];
    }, 50);
    let [chunks, bytes] = [0, 0];
    const exportMs = await send(port, key, '/v1/events?range=31d', 'text/csv', (c) => (chunks++, (bytes += c.length)));
    clearInterval(sample);
    growth = r1((peak - rss0) / 1_048_576);
    console.log(
      `CSV export of ${EVENTS.toLocaleString('en')} events: ${(exportMs / 1000).toFixed(1)} s, ${chunks} chunks, ${r1(bytes / 1_048_576)} MB, RSS growth ${growth} MB (from ${r1(rss0 / 1_048_576)} MB), heap high-water +${r1((heapPeak - heap0) / 1_048_576)} MB; load ${load()}`,
    );
  }
  agent.destroy();
  for (const id of segments) await app.inject({ method: 'DELETE', url: `/v1/segments/${id}`, headers: { authorization: headers.authorization } });
  await app.close();
  await gen.end();
  await db.close();
  if (opt.drop) await admin(`DROP DATABASE ${dbName()}`);
  for (const f of failures.slice(0, 10)) console.log(`  ${f}`);
  console.log(
    JSON.stringify({
      store: 'postgres',
      events: EVENTS,
      p95_ms: p95,
      export_rss_growth_mb: growth,
      query_too_large: failures.length,
      load_1m: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
