// bench:behaviour: p95 of the behaviour queries (a 5-step funnel over 30 days, a 12-week
// retention matrix, a segment's size, paths) over HTTP (app.inject) on a generated fixture:
// --events N over 30 days, N/100 actors, 20 event names that each actor walks mostly in order,
// 1% of actors linked by identify, folded once into the read model by the real rollup job.
// PostgreSQL with DATABASE_URL, else the embedded store in a temporary folder. On PostgreSQL the
// fixture is kept (tenant "bench-behaviour-N") and reused by the next run with the same --events
// unless --fresh; its times were generated relative to its own creation, so a reused fixture's
// 30 days slide out of the range: rerun with --fresh after a few hours. On the embedded store,
// --data-dir DIR keeps the fixture the same way: DIR/fixture.json names the --events of a fixture
// whose fold finished, and a run with the same --events (and no --fresh) reuses it; any other DIR
// is built afresh (its pg/ folder is replaced). Without --data-dir, a temporary folder is used and
// removed. --only funnel_5_steps,paths runs those queries only. The last line is the JSON: {"store", "events", "p50_ms", "p95_ms", "cpu_p50_ms": {…}, "load"}
// (cpu: this process's CPU time per request: the embedded store's worker included, a PostgreSQL server not).
// docs/benchmarks.md.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createTenant } from '../src/admin/operations.js';
import { storeRollupJob } from '../src/jobs/all.js';
import { rollupJob } from '../src/jobs/rollups.js';
import { startJobs } from '../src/jobs/runner.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { mergePlans } from '../src/domain/plans.js';
import { LOCKS, openDb, type Db } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
import { upkeep } from '../src/storage/rollups.js';
import { insertProduct } from '../src/storage/products.js';
import { insertApiKey } from '../src/storage/tenants.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '5' },
    fresh: { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    only: { type: 'string' },
  },
});
const EVENTS = Number(values.events);
const RUNS = Number(values.runs);
const DATABASE_URL = process.env.DATABASE_URL;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;

async function generate(db: Db, tenantId: string, productId: string): Promise<void> {
  const actors = Math.max(10, Math.floor(EVENTS / 100));
  console.log(`${DATABASE_URL ? 'postgres' : 'pglite'}: generating ${EVENTS} events, ${actors} actors; load ${load()}`);

  const t0 = performance.now();
  const chunk = DATABASE_URL ? 500_000 : 100_000; // server-side, each chunk well under the pool's 15 s statement timeout
  for (let start = 0; start < EVENTS; start += chunk) {
    // Actor i % A does its k-th event (k = i / A) at a time that grows with i; its name is e(k mod 20),
    // shifted by 0–2 at random, so most actors walk e0 → e1 → … with some noise.
    // On the job connections: no client-side query timeout.
    await db.tryWithLock(LOCKS.bench, (session) =>
      session.tx(async (q) => {
        await q.exec('SET LOCAL statement_timeout = 0');
        await q.query(
          `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, account_id, properties)
       SELECT $1, gen_random_uuid(), $2, '1.0.0', 'ui', 'e' || (((i / $4) + (random() * 2)::int) % 20),
              now() - interval '30 days' + (i::float8 / $3) * interval '30 days', now(),
              'a' || (i % $4), 'acct-' || (i % $4 % 500), '{}'::jsonb
         FROM generate_series($5::bigint, $6::bigint) i`,
          [tenantId, productId, EVENTS, actors, start, Math.min(EVENTS, start + chunk) - 1],
        );
      }),
    );
  }
  await db.write(
    `INSERT INTO actor_links (tenant_id, anonymous_actor_id, identified_actor_id, identified_at, product_id, received_at)
     SELECT $1, 'a' || i, 'user-' || i, now(), $2, now() FROM generate_series(0, $3::int - 1, 100) i`,
    [tenantId, productId, actors],
  );
  await db.withLock(LOCKS.bench, (session) => session.exec('SET statement_timeout = 0; ANALYZE events; ANALYZE actor_links'));
  console.log(`generated in ${((performance.now() - t0) / 1000).toFixed(0)} s; load ${load()}`);
  const t1 = performance.now();
  // PostgreSQL's job as a server runs it; the embedded store's in slices of 10 s (nothing waits for it here).
  const jobs = startJobs(db, [DATABASE_URL ? storeRollupJob(60, true) : rollupJob(60)], { warn: console.warn, info() {}, error: console.error } as never);
  if (!(await jobs.runOnce('rollups'))) throw new Error('the fold failed');
  await jobs.stop();
  // What the job's upkeep does every 10 minutes (and autovacuum on a PostgreSQL server that runs it), the rewrite of a bloated rm_actor_months included:
  // without it the queries run on planner guesses (rm_actor_months, never analyzed, took retention
  // from 0.9 to 4.6 s at 10M) and read the heap where an index would do.
  await db.withLock(LOCKS.bench, async (session) => {
    await session.exec('SET statement_timeout = 0');
    await upkeep(session, { vacuumEvents: !!DATABASE_URL });
  });
  console.log(`folded in ${((performance.now() - t1) / 1000).toFixed(0)} s; load ${load()}`);
}

async function main(): Promise<void> {
  const keep = DATABASE_URL ? undefined : values['data-dir'];
  const marker = keep && join(keep, 'fixture.json');
  const reuseDir = !!marker && !values.fresh && existsSync(marker) && (JSON.parse(readFileSync(marker, 'utf8')) as { events?: number }).events === EVENTS;
  if (keep && !reuseDir) {
    // Not a finished fixture of this size: start it again (only our own files in DIR).
    rmSync(join(keep, 'pg'), { recursive: true, force: true });
    rmSync(join(keep, 'fixture.json'), { force: true });
    mkdirSync(keep, { recursive: true });
  }
  const dir = DATABASE_URL ? undefined : (keep ?? mkdtempSync(join(tmpdir(), 'tally-bench-behaviour-')));
  const db = await openDb({ databaseUrl: DATABASE_URL, dataDir: dir, poolSize: 4 });
  await migrate(db);
  const config = loadConfig({ ADMIN_TOKEN: 'bench-admin-token', LOG_LEVEL: 'warn', MAX_EVENT_LOOP_DELAY_MS: '0', ...(DATABASE_URL && { DATABASE_URL }) });
  const plans = mergePlans({ enterprise: { requests_per_minute: 1_000_000 } });
  const app = await buildApp({ config, db, plans });
  const name = `bench-behaviour-${EVENTS}`;
  const old = await db.query<{ id: string }>(`SELECT id FROM tenants WHERE name = $1 ORDER BY created_at DESC LIMIT 1`, [name]);
  let key: string;
  if (old[0] && (DATABASE_URL || reuseDir) && !values.fresh) {
    key = (await insertApiKey(db, old[0].id, 'bench', ['read'])).key;
    console.log(`${DATABASE_URL ? 'postgres' : `pglite (${keep})`}: reusing the fixture of tenant ${name}; load ${load()}`);
  } else {
    const { tenant, api_keys } = await createTenant({ db, plans, trialDays: config.trialDays, settings: config }, { name, plan: 'enterprise' });
    const product = (await insertProduct(db, tenant.id, 'app', 'App'))!;
    key = api_keys.find((k) => k.permissions.includes('read'))!.key;
    await generate(db, tenant.id, product.id);
    if (marker) writeFileSync(marker, JSON.stringify({ events: EVENTS, created_at: new Date().toISOString() }) + '\n');
  }

  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  // The segment is made by its query's first (warm-up) run, so a run without it makes none.
  let segmentId: string | undefined;
  const segment = async () =>
    (segmentId ??= (
      await app.inject({
        method: 'POST',
        url: '/v1/segments',
        headers,
        payload: JSON.stringify({ name: 'e3 five times', definition: { range: '30d', did: [{ category: 'ui', name: 'e3', min_count: 5 }] } }),
      })
    ).json().id as string);
  const steps = [0, 1, 2, 3, 4].map((i) => ({ category: 'ui', name: `e${i}` }));
  const queries: Record<string, () => Promise<{ statusCode: number; body: string }>> = {
    funnel_5_steps: () =>
      app.inject({
        method: 'POST',
        url: '/v1/funnels',
        headers,
        payload: JSON.stringify({ product: 'app', range: '30d', steps, window: { value: 7, unit: 'day' } }),
      }),
    retention_12_weeks: () =>
      app.inject({ method: 'POST', url: '/v1/retention', headers, payload: JSON.stringify({ product: 'app', range: '84d', period: 'week', periods: 12 }) }),
    // 30 daily cohorts of 10 periods each, every actor in most of them: the largest matrix of pairs.
    retention_recurring_30_days: () =>
      app.inject({
        method: 'POST',
        url: '/v1/retention',
        headers,
        payload: JSON.stringify({ product: 'app', range: '30d', period: 'day', periods: 10, type: 'recurring' }),
      }),
    segment_size: async () => app.inject({ method: 'GET', url: `/v1/segments/${await segment()}/size`, headers: { authorization: headers.authorization } }),
    paths: () =>
      app.inject({
        method: 'GET',
        url: '/v1/paths?product=app&range=30d&category=ui&name=e0&steps=3&limit=10',
        headers: { authorization: headers.authorization },
      }),
  };
  const p50: Record<string, number> = {};
  const p95: Record<string, number> = {};
  // CPU time of this process (the embedded store's worker thread included) per request: what the
  // other work on a shared machine does not change much, unlike the wall time.
  const cpu50: Record<string, number> = {};
  const only = values.only?.split(',');
  const unknown = only?.filter((name) => !(name in queries));
  if (unknown?.length) throw new Error(`--only: no query named ${unknown.join(', ')} (${Object.keys(queries).join(', ')})`);
  for (const [name, run] of Object.entries(queries)) {
    if (only && !only.includes(name)) continue;
    const times: number[] = [];
    const cpus: number[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const s = performance.now();
      const c = process.cpuUsage();
      const res = await run();
      const ms = performance.now() - s;
      const used = process.cpuUsage(c);
      if (res.statusCode !== 200) console.log(`  ${name}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      if (i > 0) times.push(ms); // the first run warms the cache
      if (i > 0) cpus.push((used.user + used.system) / 1000);
    }
    p50[name] = Math.round(pct(times, 50));
    p95[name] = Math.round(pct(times, 95));
    cpu50[name] = Math.round(pct(cpus, 50));
    console.log(
      `  ${name}: median ${p50[name]} ms, p95 ${p95[name]} ms (runs ${times.map((x) => x.toFixed(0)).join(', ')}); CPU median ${cpu50[name]} ms; load ${load()}`,
    );
  }
  await app.close();
  await db.close();
  if (dir && !keep) rmSync(dir, { recursive: true, force: true });
  console.log(
    JSON.stringify({
      store: DATABASE_URL ? 'postgres' : 'pglite',
      events: EVENTS,
      p50_ms: p50,
      p95_ms: p95,
      cpu_p50_ms: cpu50,
      load: loadavg()[0]!.toFixed(2),
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
