// The real Tally server for client tests: test/helpers/app.ts's app on a real socket, plus a
// few read-only queries on its store. Nothing here answers HTTP in the server's place.
import type { AppDeps } from '../../../src/app.js';
import type { Db } from '../../../src/storage/db.js';
import { startTestApp, tenantWithProduct, type Tenant, type TestApp } from '../../../test/helpers/app.js';

export { ADMIN_TOKEN, openTestDb, tenantWithProduct } from '../../../test/helpers/app.js';

export interface RunningServer {
  t: TestApp;
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The overload guard (src/http/plugins/overload.ts) is switched off: in a test process the
 * embedded store runs on the app's own event loop, so its start-up and bulk writes read as a
 * saturated loop and the guard sheds the test's own requests with 503.
 */
export async function startServer(opts: Partial<AppDeps> & { env?: Record<string, string>; port?: number } = {}): Promise<RunningServer> {
  const { port: wanted, env, ...deps } = opts;
  const t = await startTestApp({ ...deps, env: { MAX_EVENT_LOOP_DELAY_MS: '0', ...env } });
  await t.app.listen({ port: wanted ?? 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as { port: number };
  return { t, port, url: `http://127.0.0.1:${port}`, close: () => t.close() };
}

export async function tenant(server: RunningServer, plan?: Parameters<typeof tenantWithProduct>[1]): Promise<Tenant & { productId: string }> {
  return tenantWithProduct(server.t.app, plan);
}

export async function storedEventIds(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db.query<{ event_id: string }>('SELECT event_id::text AS event_id FROM events WHERE tenant_id = $1', [tenantId]);
  return rows.map((r) => r.event_id);
}

export interface SessionRow {
  session_id: string;
  actor_id: string;
  account_id: string | null;
  license_id: string | null;
  started_at: Date;
  ended_at: Date | null;
  end_reason: string | null;
}

export async function sessions(db: Db, tenantId: string): Promise<SessionRow[]> {
  return db.query<SessionRow>(
    'SELECT session_id, actor_id, account_id, license_id, started_at, ended_at, end_reason FROM sessions WHERE tenant_id = $1 ORDER BY started_at',
    [tenantId],
  );
}

export async function rows<T>(db: Db, sql: string, params: unknown[]): Promise<T[]> {
  return db.query<T>(sql, params);
}

/** A fetch that records what went over the wire (the requests are real). */
/**
 * A fetch that logs each request when its answer (or error) comes back. `inFlight` counts the
 * requests sent and not yet answered: the log is complete only when it is 0 (an event can be
 * stored before its answer arrives).
 */
export function recordingFetch(): {
  fetch: typeof fetch;
  log: { path: string; status: number | 'error'; at: number; events?: number; env: boolean }[];
  inFlight: () => number;
} {
  const log: { path: string; status: number | 'error'; at: number; events?: number; env: boolean }[] = [];
  let inFlight = 0;
  const wrapped: typeof fetch = async (input, init) => {
    const path = new URL(String(input)).pathname;
    const body = typeof init?.body === 'string' ? init.body : '';
    const events = path === '/v1/events' ? (JSON.parse(body) as unknown[]).length : undefined;
    const env = Boolean((init?.headers as Record<string, string> | undefined)?.['x-environment-data']);
    const at = Date.now();
    inFlight++;
    try {
      const res = await fetch(input, init);
      log.push({ path, status: res.status, at, ...(events !== undefined ? { events } : {}), env });
      return res;
    } catch (err) {
      log.push({ path, status: 'error', at, ...(events !== undefined ? { events } : {}), env });
      throw err;
    } finally {
      inFlight--;
    }
  };
  return { fetch: wrapped, log, inFlight: () => inFlight };
}

export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
