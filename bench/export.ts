// The event export on the embedded store (bench:queries measures it on PostgreSQL): N events over
// 30 days generated in SQL into a PGlite data directory (kept for later runs), then
// `GET /v1/events?range=31d` as CSV over real HTTP, read by curl in another process so that only
// the server is in this one; the process's RSS and heap sampled every 50 ms while it streams,
// against what they were before each export (so later runs show what the first left behind).
// Usage: npm run bench:export -- [--events 200000] [--dir /tmp/tally-bench-export] [--runs 3]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createTenant } from '../src/admin/operations.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { mergePlans } from '../src/domain/plans.js';
import { openDb } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
import { insertProduct } from '../src/storage/products.js';

const { values: opt } = parseArgs({
  options: { events: { type: 'string', default: '200000' }, dir: { type: 'string' }, runs: { type: 'string', default: '3' } },
});
const EVENTS = Number(opt.events);
const dir = opt.dir ?? `/tmp/tally-bench-export-${EVENTS}`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const mb = (n: number) => Math.round((n / 1_048_576) * 10) / 10;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const fresh = !existsSync(dir);
const db = await openDb({ dataDir: dir, syncOnCommit: false });
await migrate(db);
const config = loadConfig({ ADMIN_TOKEN: 'bench-admin-token', DATA_DIR: dir, LOG_LEVEL: 'warn', MAX_EVENT_LOOP_DELAY_MS: '0', EMBEDDED_SYNC: 'off' });
const plans = mergePlans({ enterprise: { requests_per_minute: 1_000_000 } });
let key: string;
if (fresh) {
  const t0 = performance.now();
  const { tenant, api_keys } = await createTenant({ db, plans, trialDays: 21, settings: config }, { name: 'bench', plan: 'enterprise' });
  const product = (await insertProduct(db, tenant.id, 'desktop-app', 'Desktop app'))!;
  key = api_keys.find((k) => k.permissions.includes('view_accounts'))!.key;
  for (let done = 0; done < EVENTS; done += 100_000)
    await db.query(
      `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, account_id, license_id, properties)
       SELECT $1, gen_random_uuid(), $2, '5.' || (g % 20) || '.0', 'ui', 'ui_clicked', ts, ts + interval '2 seconds', 'user-' || lpad((g % 50000)::text, 5, '0'),
              'acct_' || (g % 2000), 'lic_' || (g % 5000), jsonb_build_object('screen', (array['home','settings','editor','billing','reports'])[1 + g % 5])
         FROM (SELECT g, now() - random() * interval '30 days' AS ts FROM generate_series(1, $3::int) g) s`,
      [tenant.id, product.id, Math.min(100_000, EVENTS - done)],
    );
  await db.exec('CREATE TABLE bench_fixture (key text)');
  await db.exec('ANALYZE events');
  await db.query('INSERT INTO bench_fixture VALUES ($1)', [key]);
  console.log(`generated ${EVENTS.toLocaleString('en')} events in ${dir} in ${((performance.now() - t0) / 1000).toFixed(0)} s; load ${load()}`);
} else key = (await db.query<{ key: string }>('SELECT key FROM bench_fixture'))[0]!.key;

const app = await buildApp({ config, db, plans });
await app.listen({ port: 0, host: '127.0.0.1' });
const port = (app.server.address() as { port: number }).port;
const runs: { s: number; rss: number; heap: number }[] = [];
for (let r = 0; r < Number(opt.runs); r++) {
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const m0 = process.memoryUsage();
  let [rss, heap] = [m0.rss, m0.heapUsed];
  const sample = setInterval(() => {
    const m = process.memoryUsage();
    [rss, heap] = [Math.max(rss, m.rss), Math.max(heap, m.heapUsed)];
  }, 50);
  const t0 = performance.now();
  const bytes = await new Promise<number>((resolve, reject) => {
    const headers = ['-H', `authorization: Bearer ${key}`, '-H', 'accept: text/csv'];
    const curl = spawn('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', ...headers, `http://127.0.0.1:${port}/v1/events?range=31d`]);
    let out = '';
    curl.stdout.on('data', (d: Buffer) => (out += d));
    curl.on('error', reject);
    curl.on('exit', () => (out.startsWith('200 ') ? resolve(Number(out.split(' ')[1])) : reject(new Error(`curl: ${out}`))));
  });
  clearInterval(sample);
  const run = { s: Math.round(performance.now() - t0) / 1000, rss: mb(rss - m0.rss), heap: mb(heap - m0.heapUsed) };
  runs.push(run);
  console.log(
    `CSV export of ${EVENTS.toLocaleString('en')} events: ${run.s} s, ${mb(bytes)} MB, RSS growth ${run.rss} MB (from ${mb(m0.rss)} MB), heap high-water +${run.heap} MB; load ${load()}`,
  );
}
await app.close();
await db.close();
console.log(
  JSON.stringify({
    store: 'pglite',
    events: EVENTS,
    export_s: median(runs.map((r) => r.s)),
    // The first export's growth: what later ones add to it is printed as later_rss_growth_mb.
    export_rss_growth_mb: runs[0]!.rss,
    export_heap_growth_mb: runs[0]!.heap,
    later_rss_growth_mb: runs.length > 1 ? Math.max(...runs.slice(1).map((r) => r.rss)) : null,
    load_1m: Number(loadavg()[0]!.toFixed(2)),
  }),
);
