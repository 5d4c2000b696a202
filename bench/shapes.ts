// Times fixed request shapes on bench:queries' fixture: the shapes a console or an API user sends
// (a name with its product, a name with its category, a comparison with the previous period, a
// start event's retention, a segment without an event condition, account coverage, the biggest
// account's views) that bench:queries' random mix
// does not, each the median of --runs after one warm-up, over app.inject (no socket: the store's
// time and the server's). See docs/benchmarks.md, "Request shapes".
// Usage: npm run bench:shapes -- [--runs 3] [--only trends_name_product,retention_start_event]
//   DATABASE_URL (default postgres://postgres@127.0.0.1:5432/tally_bench_queries) must hold a fixture
//   built by bench:queries (its bench_fixture table); nothing is written but the segments it times.
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { mergePlans } from '../src/domain/plans.js';
import { openDb } from '../src/storage/db.js';

const { values: opt } = parseArgs({ options: { runs: { type: 'string', default: '3' }, only: { type: 'string' } } });
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/tally_bench_queries';
const RUNS = Math.max(1, Number(opt.runs));

const fixture = new pg.Client({ connectionString: DATABASE_URL });
await fixture.connect();
const kept = (await fixture.query<{ key: string; events: string }>('SELECT key, events FROM bench_fixture').catch(() => ({ rows: [] }))).rows[0];
await fixture.end();
if (!kept) throw new Error(`no bench:queries fixture at ${DATABASE_URL}: run npm run bench:queries first`);

const db = await openDb({ databaseUrl: DATABASE_URL, poolSize: 8 });
const config = loadConfig({ ADMIN_TOKEN: randomUUID(), DATABASE_URL, LOG_LEVEL: 'warn', MAX_EVENT_LOOP_DELAY_MS: '0' });
const app = await buildApp({ config, db, plans: mergePlans({ enterprise: { requests_per_minute: 1_000_000 } }) });
const headers = { authorization: `Bearer ${kept.key}`, 'content-type': 'application/json' };

/** One request; a 422 query_too_large (past the statement budget) is timed as it is, and counted. */
async function send(method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ ms: number; status: number; json: Record<string, unknown> }> {
  const t0 = performance.now();
  const res = await app.inject({ method, url, headers, ...(body !== undefined && { payload: JSON.stringify(body) }) });
  const ms = performance.now() - t0;
  if (res.statusCode !== 200 && res.statusCode !== 201 && res.statusCode !== 422)
    throw new Error(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return { ms, status: res.statusCode, json: res.json() };
}

const segment = async (definition: object) => {
  const { json } = await send('POST', '/v1/segments', { name: `bench:shapes ${randomUUID()}`, definition });
  return `/v1/segments/${String(json.id)}/size`;
};
const startEvent = { category: 'editor', name: 'editor_opened' };
const shapes: Record<string, () => Promise<[method: 'GET' | 'POST', url: string, body?: unknown]>> = {
  trends_name_product: async () => ['GET', '/v1/reports/trends?range=30d&product=desktop-app&name=editor_saved'],
  trends_category_name: async () => ['GET', '/v1/reports/trends?range=7d&category=editor&name=editor_saved'],
  active_actors_name_product: async () => ['GET', '/v1/reports/active-actors?range=30d&product=desktop-app&name=editor_saved'],
  explorer_name_product: async () => ['GET', '/v1/events?range=7d&product=desktop-app&name=editor_saved'],
  trends_compare_7d: async () => ['GET', '/v1/reports/trends?range=7d&compare=previous'],
  retention_start_event: async () => ['POST', '/v1/retention', { range: '30d', period: 'day', start_event: startEvent }],
  segment_active_7d: async () => ['GET', await segment({ range: '7d' })],
  segment_account_30d: async () => ['GET', await segment({ range: '30d', account_id: 'acct_0001' })],
  accounts_coverage: async () => ['GET', '/v1/accounts/coverage'],
  // The biggest account (acct_0001: about 4 % of the events), its overview and its four lists' first pages.
  account_overview: async () => ['GET', '/v1/accounts/acct_0001'],
  ...Object.fromEntries(
    ['features', 'actors', 'licenses', 'versions'].map((list) => [`account_${list}`, async () => ['GET', `/v1/accounts/acct_0001/${list}`] as const]),
  ),
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const only = opt.only?.split(',');
const out: Record<string, number> = {};
console.log(`${Number(kept.events).toLocaleString('en')} events; ${RUNS} runs per shape after one warm-up; load ${load()}`);
for (const [name, shape] of Object.entries(shapes)) {
  if (only && !only.includes(name)) continue;
  const [method, url, body] = await shape();
  await send(method, url, body); // warm-up
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await send(method, url, body));
  out[name] = Math.round(median(runs.map((r) => r.ms)) * 10) / 10;
  const times = runs.map((r) => `${r.ms.toFixed(0)}${r.status === 422 ? ' (422)' : ''}`).join(', ');
  console.log(`${name}: median ${out[name]} ms (${times}) ${method} ${url}${body ? ` ${JSON.stringify(body)}` : ''}`);
}
await app.close();
await db.close();
console.log(JSON.stringify({ store: 'postgres', events: Number(kept.events), median_ms: out, load_1m: Number(loadavg()[0]!.toFixed(2)) }));
