// A seeded tenant for the console's browser tests, sent through the real HTTP API of a real
// server (events, exceptions, a rejected event), then the real rollup job run once.
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { ADMIN_TOKEN } from '../../../test/helpers/app.js';
import { rollupJob } from '../../../src/jobs/rollups.js';
import { startJobs } from '../../../src/jobs/runner.js';
import type { RunningServer } from '../../../client/test/helpers/server.js';

/** The events seedTenant sends (besides CONSOLE_PERF_EVENTS): 240, and the dropouts' 5. */
export const SEEDED_EVENTS = 245;

export interface Seeded {
  tenantId: string;
  adminKey: string;
  ingestKey: string;
}

async function call(
  base: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

export async function api<T>(base: string, key: string, path: string, method = 'GET', body?: unknown, headers?: Record<string, string>): Promise<T> {
  const r = await call(base, key, method, path, body, headers);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json as T;
}

export async function createTenant(base: string, plan: string, name: string): Promise<Seeded> {
  const body = await api<{ tenant: { id: string }; api_keys: { key: string; permissions: string[] }[] }>(base, ADMIN_TOKEN, '/admin/v1/tenants', 'POST', {
    name,
    plan,
  });
  return {
    tenantId: body.tenant.id,
    ingestKey: body.api_keys.find((k) => k.permissions.length === 1)!.key,
    adminKey: body.api_keys.find((k) => k.permissions.length === 4)!.key,
  };
}

export async function issueKey(base: string, tenantId: string, permissions: string[]): Promise<string> {
  const body = await api<{ key: string }>(base, ADMIN_TOKEN, `/admin/v1/tenants/${tenantId}/keys`, 'POST', { permissions, name: permissions.join('-') });
  return body.key;
}

/** Two products, three versions, 12 actors (20 events each, all three kinds) in 3 accounts, 240 events over the last 7 days and 3 actors who drop out of the funnel (5 events), 4 exception groups, 6 sessions (2 crashed) on two OSes, 2 dead letters. */
export async function seedTenant(server: RunningServer): Promise<Seeded> {
  const base = server.url;
  const t = await createTenant(base, 'business', 'console');
  for (const slug of ['app', 'web']) await api(base, t.adminKey, '/v1/products', 'POST', { slug, name: slug === 'app' ? 'Desktop app' : 'Web app' });
  const now = Date.now();
  const events = Array.from({ length: 240 }, (_, i) => ({
    event_id: uuidv7(),
    category: i % 3 === 0 ? 'editor' : 'app',
    name: i % 3 === 0 ? 'file_saved' : i % 2 ? 'started' : 'opened',
    // Actor u = i / 20 starts 3 + u % 4 days ago and stays for 2 + u % 3 days: daily cohorts of 3
    // actors each, retained 100 %, 67 %, 33 % (a retention matrix worth looking at).
    timestamp: new Date(now - (3 + (Math.floor(i / 20) % 4) - (i % (2 + (Math.floor(i / 20) % 3)))) * 86_400_000 - i * 60_000).toISOString(),
    actor_id: `user-${Math.floor(i / 20)}`,
    product: i % 4 === 0 ? 'web' : 'app',
    product_version: ['1.0.0', '1.1.0', '2.0.0'][i % 3]!,
    account_id: `acme-${i % 3}`,
    license_id: `lic-${i % 6}`,
  }));
  // Three actors who leave the funnel started → opened → file_saved early: drop-0 after starting,
  // drop-1 and drop-2 after opening.
  const dropouts = [
    ['drop-0', 'started', 1, '1.0.0'],
    ['drop-1', 'started', 2, '1.1.0'],
    ['drop-1', 'opened', 2, '1.1.0'],
    ['drop-2', 'started', 3, '2.0.0'],
    ['drop-2', 'opened', 3, '2.0.0'],
  ].map(([actor, name, days, version], i) => ({
    ...events[1]!,
    event_id: uuidv7(),
    category: 'app',
    name: name as string,
    actor_id: actor as string,
    product: 'app',
    product_version: version as string,
    timestamp: new Date(now - (days as number) * 86_400_000 + i * 60_000).toISOString(),
  }));
  events.push(...dropouts);
  for (let i = 0; i < events.length; i += 100) await api(base, t.ingestKey, '/v1/events', 'POST', events.slice(i, i + 100));
  await bulk(base, t.ingestKey, Number(process.env.CONSOLE_PERF_EVENTS ?? 0), now);
  const kinds = ['TypeError', 'RangeError', 'IOError'];
  for (let i = 0; i < 7; i++) {
    const type = kinds[i % 3]!;
    await api(base, t.ingestKey, '/v1/events/exceptions', 'POST', {
      exception_id: randomUUID(),
      exception_type: type,
      severity: i % 2 ? 'non_fatal' : 'fatal',
      occurred_at: new Date(now - i * 3_600_000).toISOString(),
      actor_id: `user-${i}`,
      message: `${type} in export`,
      stack_trace: `${type}: ${type} in export\n    at exportReport (app/export.ts:${10 + (i % 3)}:5)\n    at main (app/main.ts:3:1)`,
      product: 'app',
      product_version: '2.0.0',
      account_id: 'acme-0',
    });
  }
  // Sessions (with the environment the client reports): 6 by user-0…5 a day ago, 5 minutes each;
  // the sessions of user-0 and user-3 crash (a fatal exception in the session), user-5's stays open.
  for (let i = 0; i < 6; i++) {
    const session_id = randomUUID();
    const started = now - 86_400_000 - i * 3_600_000;
    const env = Buffer.from(JSON.stringify({ os: i % 2 ? 'macOS 14.5' : 'Windows 11 23H2', runtime: 'Electron 31', locale: 'en-US' })).toString('base64');
    const actor = `user-${i}`;
    const version = ['1.0.0', '1.1.0', '2.0.0'][i % 3]!;
    await api(
      base,
      t.ingestKey,
      '/v1/events/sessions',
      'POST',
      { session_id, actor_id: actor, product: 'app', product_version: version, started_at: new Date(started).toISOString() },
      { 'x-environment-data': env },
    );
    if (i % 3 === 0)
      await api(base, t.ingestKey, '/v1/events/exceptions', 'POST', {
        exception_id: randomUUID(),
        exception_type: 'SessionCrash',
        severity: 'fatal',
        occurred_at: new Date(started + 60_000).toISOString(),
        actor_id: actor,
        session_id,
        message: 'crashed',
        product: 'app',
        product_version: version,
      });
    if (i !== 5) await api(base, t.ingestKey, '/v1/events/sessions/end', 'POST', { session_id, ended_at: new Date(started + 300_000).toISOString() });
  }
  // Rejected: an unknown product and a bad timestamp, kept as dead letters.
  await call(base, t.ingestKey, 'POST', '/v1/events', [{ ...events[0], event_id: uuidv7(), product: 'nope' }]);
  await call(base, t.ingestKey, 'POST', '/v1/events', [{ ...events[1], event_id: uuidv7(), product: 'nope2' }]);
  const jobs = startJobs(server.t.db, [rollupJob(60)], { info() {}, warn() {}, error() {}, debug() {} } as never);
  await jobs.runOnce('rollups');
  await jobs.stop();
  return t;
}

/** CONSOLE_PERF_EVENTS=1000000: that many more events over 29 days (inside the rollup's 30-day window), 1,000 a request, 4 requests at a time (for the time-to-interactive measurement). */
async function bulk(base: string, key: string, count: number, now: number): Promise<void> {
  let sent = 0;
  const batch = () => {
    const n = Math.min(1000, count - sent);
    sent += n;
    return Array.from({ length: n }, (_, i) => ({
      event_id: uuidv7(),
      category: 'bulk',
      name: `action_${i % 20}`,
      timestamp: new Date(now - ((sent + i) % (29 * 1440)) * 60_000).toISOString(),
      actor_id: `bulk-${(sent + i) % 5000}`,
      product: 'app',
      product_version: '2.0.0',
      account_id: `bulk-acct-${i % 50}`,
    }));
  };
  const worker = async () => {
    while (sent < count) await api(base, key, '/v1/events', 'POST', batch());
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}
