// Soak: a spawned server under half its saturating load for --minutes (default 10), over real HTTP
// from this process, sampling the server's RSS and the p99 of batch latency every --sample seconds.
// Memory must stay flat. Usage: npm run bench:soak -- [--store pglite|postgres] [--minutes 10] [--sample 30]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { startServer } from '../test/helpers/server-process.js';
import { removeOnExit } from '../test/helpers/on-exit.js';

const { values: opt } = parseArgs({
  options: {
    store: { type: 'string', default: 'pglite' },
    minutes: { type: 'string', default: '10' },
    sample: { type: 'string', default: '30' },
    probe: { type: 'string', default: '15' },
  },
});
const MINUTES = Number(opt.minutes);
const SAMPLE_S = Number(opt.sample);
const PROBE_S = Number(opt.probe);
const ADMIN = 'soak-admin';
const dir = removeOnExit(mkdtempSync(join(tmpdir(), 'tally-soak-')));
writeFileSync(join(dir, 'plans.json'), JSON.stringify({ enterprise: { requests_per_minute: 10_000_000, monthly_events: 1e12 } }));
const env: Record<string, string> = {
  ...(process.env.EMBEDDED_SYNC ? { EMBEDDED_SYNC: process.env.EMBEDDED_SYNC } : {}),
  ADMIN_TOKEN: ADMIN,
  PLANS_FILE: join(dir, 'plans.json'),
  LOG_LEVEL: 'warn',
  DATA_DIR: join(dir, 'data'),
};
if (opt.store === 'postgres') env.DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/tally_bench';

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function post(url: string, key: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const categories = ['ui', 'report', 'settings', 'lifecycle'];
function batch(n: number): string {
  const now = new Date().toISOString();
  return JSON.stringify(
    Array.from({ length: n }, (_, i) => ({
      event_id: uuidv7(),
      category: categories[i % 4],
      name: `action_${i % 17}`,
      timestamp: now,
      actor_id: `actor-${i % 200}`,
      product: 'app',
      product_version: `1.${i % 5}.0`,
      account_id: `account-${i % 20}`,
      properties: { screen: `s${i % 9}`, plan: 'pro', locale: 'en-GB', build: String(i % 3) },
    })),
  );
}
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const p99 = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.ceil(0.99 * xs.length) - 1]! : 0);

const server = await startServer(env);
try {
  const created = JSON.parse(
    await new Promise<string>((resolve) => {
      const req = http.request(
        `${server.url}/admin/v1/tenants`,
        { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' } },
        (res) => {
          let s = '';
          res.on('data', (d) => (s += d));
          res.on('end', () => resolve(s));
        },
      );
      req.end(JSON.stringify({ name: 'soak', plan: 'enterprise' }));
    }),
  ) as { api_keys: { key: string; permissions: string[] }[] };
  const key = created.api_keys.find((k) => k.permissions.length === 4)!.key;
  await post(`${server.url}/v1/products`, key, JSON.stringify({ slug: 'app' }));
  const url = `${server.url}/v1/events`;

  // 1. Saturation with the soak's own batch size (100 events: per-request costs count), 8 senders as fast as they go.
  let sent = 0;
  const probeEnd = Date.now() + PROBE_S * 1000;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (Date.now() < probeEnd) if ((await post(url, key, batch(100))) === 200) sent += 100;
    }),
  );
  const saturating = sent / PROBE_S;
  const target = saturating / 2;
  console.log(`saturating load ≈ ${Math.round(saturating)} events/s; soaking at ${Math.round(target)} events/s for ${MINUTES} min`);

  // 2. Soak at half of it: 100-event batches, paced.
  const interval = 100_000 / target; // ms between 100-event batches
  const end = Date.now() + MINUTES * 60_000;
  const samples: { t_s: number; rss_mb: number; p99_ms: number; events_per_s: number; errors: number }[] = [];
  let window: number[] = [];
  let windowEvents = 0;
  let errors = 0;
  const started = Date.now();
  let nextSample = started + SAMPLE_S * 1000;
  const inflight = new Set<Promise<void>>();
  for (let due = Date.now(); Date.now() < end; due += interval) {
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    const p = post(url, key, batch(100))
      .then((status) => {
        window.push(performance.now() - t0);
        if (status === 200) windowEvents += 100;
        else errors++;
      })
      .catch(() => void errors++)
      .finally(() => inflight.delete(p));
    inflight.add(p);
    if (Date.now() >= nextSample) {
      samples.push({
        t_s: Math.round((Date.now() - started) / 1000),
        rss_mb: Math.round(rssMb(server.child.pid!)),
        p99_ms: Math.round(p99(window)),
        events_per_s: Math.round(windowEvents / SAMPLE_S),
        errors,
      });
      console.log(JSON.stringify(samples[samples.length - 1]));
      window = [];
      windowEvents = 0;
      nextSample += SAMPLE_S * 1000;
    }
  }
  await Promise.all(inflight);
  const q = Math.max(1, Math.floor(samples.length / 4));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const early = mean(samples.slice(q, 2 * q).map((s) => s.rss_mb));
  const late = mean(samples.slice(-q).map((s) => s.rss_mb));
  console.log(
    JSON.stringify({
      store: opt.store,
      minutes: MINUTES,
      saturating_events_per_s: Math.round(saturating),
      target_events_per_s: Math.round(target),
      achieved_events_per_s: Math.round(mean(samples.map((s) => s.events_per_s))),
      rss_mb_second_quarter: Math.round(early),
      rss_mb_last_quarter: Math.round(late),
      rss_growth_pct: Math.round(((late - early) / early) * 1000) / 10,
      p99_ms_max: Math.max(...samples.map((s) => s.p99_ms)),
      errors,
    }),
  );
} finally {
  await server.stop();
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
