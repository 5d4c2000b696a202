// Real store, real app: PGlite in memory by default, the PostgreSQL server at TEST_DATABASE_URL
// when set. Nothing is mocked; each test makes its own tenant through the operator API.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger, InjectOptions, LightMyRequestResponse } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { buildApp, type AppDeps } from '../../src/app.js';
import { rollupJob, type RollupOptions } from '../../src/jobs/rollups.js';
import { startJobs, type Job } from '../../src/jobs/runner.js';
import { loadConfig, type Config } from '../../src/config.js';
import { DEFAULT_PLANS, type PlanName } from '../../src/domain/plans.js';
import type { App } from '../../src/http/context.js';
import { openDb, type Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';

export const ADMIN_TOKEN = 'test-admin-token';

export interface TestApp {
  app: App;
  db: Db;
  config: Config;
  close(): Promise<void>;
}

export async function openTestDb(): Promise<Db> {
  const db = await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 4 });
  await migrate(db);
  return db;
}

export async function startTestApp(overrides: Partial<AppDeps> & { env?: Record<string, string> } = {}): Promise<TestApp> {
  const db = overrides.db ?? (await openTestDb());
  // The event-loop check of overload protection is off in tests (a loaded CI machine is not an
  // overloaded server); test/overload.test.ts turns it on where it is the subject.
  const config = loadConfig({ ADMIN_TOKEN, MAX_EVENT_LOOP_DELAY_MS: '0', ...overrides.env });
  const app = await buildApp({ config, db, plans: overrides.plans ?? DEFAULT_PLANS, ...overrides });
  await app.ready();
  return {
    app,
    db,
    config,
    async close() {
      await app.close();
      if (!overrides.db) await db.close();
    },
  };
}

export interface Tenant {
  id: string;
  ingestKey: string;
  adminKey: string;
}

export async function createTenant(app: App, plan: PlanName = 'business', name = 'test'): Promise<Tenant> {
  const res = await app.inject({ method: 'POST', url: '/admin/v1/tenants', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name, plan } });
  if (res.statusCode !== 201) throw new Error(`create tenant: ${res.statusCode} ${res.body}`);
  const body = res.json();
  return {
    id: body.tenant.id,
    ingestKey: body.api_keys.find((k: { permissions: string[] }) => k.permissions.length === 1).key,
    adminKey: body.api_keys.find((k: { permissions: string[] }) => k.permissions.length === 4).key,
  };
}

/** A key of the tenant with only the `read` permission (no view_accounts). */
export async function readOnlyKey(app: App, tenantId: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/tenants/${tenantId}/keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { name: 'reader', permissions: ['read'] },
  });
  if (res.statusCode !== 201) throw new Error(`create key: ${res.statusCode} ${res.body}`);
  return res.json().key;
}

export async function createProduct(app: App, key: string, slug = 'app'): Promise<{ id: string; slug: string }> {
  const res = await app.inject({ method: 'POST', url: '/v1/products', headers: { authorization: `Bearer ${key}` }, payload: { slug, name: slug } });
  if (res.statusCode !== 201) throw new Error(`create product: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** A tenant with a product "app", ready to ingest. */
export async function tenantWithProduct(app: App, plan: PlanName = 'business'): Promise<Tenant & { productId: string }> {
  const t = await createTenant(app, plan);
  const p = await createProduct(app, t.adminKey, 'app');
  return { ...t, productId: p.id };
}

export function event(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    event_id: uuidv7(),
    category: 'ui',
    name: 'click',
    timestamp: '2026-01-02T03:04:05.678Z',
    actor_id: 'actor-1',
    product: 'app',
    product_version: '1.0.0',
    properties: { button: 'save', count: 3, ok: true },
    ...overrides,
  };
}

export function postEvents(app: App, key: string, body: unknown, extra: Partial<InjectOptions> = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/v1/events',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(extra.headers as Record<string, string>) },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    ...(extra.query ? { query: extra.query } : {}),
  });
}

/** A JSON POST with a Bearer key (none when key is undefined). */
export function post(app: App, key: string | undefined, url: string, body: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
}

export function get(app: App, key: string, url: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
}

export async function countStored(db: Db, tenantId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenantId]);
  return row!.n;
}

/** The single result of a one-event batch. */
export async function judge(app: App, key: string, e: unknown): Promise<{ status: string; reason?: string; message?: string; code: number }> {
  const res = await postEvents(app, key, [e]);
  if (res.statusCode !== 200 && res.statusCode !== 207) throw new Error(`batch: ${res.statusCode} ${res.body}`);
  return { ...res.json().results[0], code: res.statusCode };
}

/** A logger that says nothing: what the jobs run by tests are given unless a test reads their log. */
export const SILENT_LOG = { warn() {}, info() {}, error() {} } as unknown as FastifyBaseLogger;

/**
 * One run of a job, for real (startJobs(...).runOnce), as the server's timer would run it. Test
 * files run side by side on one PostgreSQL database, so another file may hold the job's advisory
 * lock: the run is tried again every 100 ms, and the test fails if the job never ran (5 s).
 */
export async function runJob(db: Db, job: Job, options: { log?: FastifyBaseLogger; now?: () => Date } = {}): Promise<void> {
  const jobs = startJobs(db, [job], options.log ?? SILENT_LOG, options.now);
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      if (await jobs.runOnce(job.name)) return;
      await sleep(100);
    }
    throw new Error(`the ${job.name} job never ran: another process held its lock, or it failed each time`);
  } finally {
    await jobs.stop();
  }
}

/** One run of the real rollup job over what is stored: the read model folded, as the server's job would. */
export async function foldReadModel(db: Db, options: RollupOptions = {}, log?: FastifyBaseLogger): Promise<void> {
  await runJob(db, rollupJob(60, options), { ...(log && { log }) });
}
