import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { buildApp, loggerOptions } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createTenant } from './admin/operations.js';
import { ensureOperatorToken, removeServerUrl, writeServerUrl } from './admin/operator-files.js';
import { loadPlans, type Plans } from './domain/plans.js';
import type { App } from './http/context.js';
import { openDb, type Db } from './storage/db.js';
import { migrate } from './storage/migrate.js';
import { releaseEmbeddedLock, takeEmbeddedLock } from './storage/embedded/owner-lock.js';
import { insertProduct } from './storage/products.js';
import { countTenants } from './storage/tenants.js';
import { backgroundJobs } from './jobs/all.js';
import { startJobs, type JobRunner } from './jobs/runner.js';

/**
 * First start with an empty store: a demo tenant (plan unlimited) and product, and a curl that
 * sends a first event. Run only once the server listens, so a start that fails earlier (a port
 * in use) creates nothing whose keys would never be shown.
 */
async function seedDemo(db: Db, plans: Plans, config: Config, base: string): Promise<string[] | undefined> {
  if ((await countTenants(db)) > 0) return undefined;
  const { tenant, api_keys } = await createTenant({ db, plans, trialDays: config.trialDays, settings: config }, { name: 'demo', plan: 'unlimited' });
  await insertProduct(db, tenant.id, 'demo-app', 'Demo app');
  const ingest = api_keys.find((k) => k.name === 'ingest')!;
  const admin = api_keys.find((k) => k.name === 'admin')!;
  const event = JSON.stringify([
    {
      event_id: uuidv7(),
      category: 'app',
      name: 'started',
      timestamp: new Date().toISOString(),
      actor_id: 'user-1',
      product: 'demo-app',
      product_version: '1.0.0',
      properties: { plan: 'free' },
    },
  ]);
  return [
    'First start: created a demo tenant (unlimited plan: no allotment, no rate limit) and the product "demo-app". These keys are shown once:',
    `  tenant id:   ${tenant.id}`,
    `  ingest key:  ${ingest.key}`,
    `  admin key:   ${admin.key}   (all permissions)`,
    '',
    'Send a first event:',
    `  curl -i -X POST ${base}/v1/events -H 'Authorization: Bearer ${ingest.key}' -H 'Content-Type: application/json' -d '${event}'`,
    '',
    `See what was rejected, if anything:  curl ${base}/v1/invalid-events -H 'Authorization: Bearer ${admin.key}'`,
    `API reference: ${base}/docs`,
    `Lost a key? npm run admin -- list-tenants, then npm run admin -- issue-key ${tenant.id} --permissions ingest`,
  ];
}

/** Where a client on this machine reaches the server (a wildcard address is reached through loopback). */
function localUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/** The innermost message: a store-unavailable error wraps the driver's own. */
function rootCause(err: unknown): string {
  let e = err as { message?: string; code?: string; cause?: unknown } | undefined;
  while (e?.cause && (e as { code?: string }).code === 'store_unavailable') e = e.cause as typeof e;
  return (e?.message || e?.code || String(e)).replace(/\.$/, '');
}

/** A failure to start that the operator can fix: printed as its one sentence, exit 1. */
function startError(err: unknown, config: Config): ConfigError | undefined {
  const e = err as NodeJS.ErrnoException & { code?: string };
  if (err instanceof ConfigError) return err;
  if (e?.code === 'EADDRINUSE')
    return new ConfigError(`Port ${config.port} on ${config.host} is already in use: stop what listens there or set PORT to a free port.`);
  if (e?.code === 'EACCES' && e.syscall === 'listen')
    return new ConfigError(`Cannot listen on port ${config.port} (permission denied): set PORT to 1024 or above.`);
  if (e?.code === 'EADDRNOTAVAIL' || (e?.code === 'ENOTFOUND' && e.syscall === 'getaddrinfo' && !config.databaseUrl)) {
    return new ConfigError(`HOST ${config.host} is not an address of this machine: set HOST to one (127.0.0.1, 0.0.0.0).`);
  }
  return undefined;
}

export async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino(loggerOptions(config.logLevel) as pino.LoggerOptions);
  let plans: Plans;
  try {
    plans = loadPlans(config.plansFile);
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}.`.replace(/\.\.$/, '.'), { cause: err });
  }
  const embedded = !config.databaseUrl;

  // Whatever has been opened so far, closed in reverse on a failed start or on a signal.
  let db: Db | undefined;
  let app: App | undefined;
  let jobs: JobRunner | undefined;
  let locked = false;
  const closeAll = async () => {
    if (app) await app.close(); // stops accepting, answers 503 on kept-alive sockets, waits for in-flight requests
    if (jobs) await jobs.stop();
    if (db) await db.close();
    if (embedded) removeServerUrl(config.dataDir);
    if (locked) releaseEmbeddedLock(config.dataDir);
  };

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: readiness off, draining in-flight requests');
    if (app) app.tally.ready.value = false;
    const force = setTimeout(() => {
      log.error('grace period over; exiting with requests still open');
      process.exit(1);
    }, config.shutdownDelayMs + config.shutdownGraceMs);
    force.unref();
    try {
      // Readiness fails first (BAD-INPUTS 42): on SIGTERM, /readyz answers 503 while requests are
      // still served for SHUTDOWN_DELAY_MS, so a balancer's probe takes the process out of rotation
      // before the listener closes. Ctrl-C (SIGINT) stops at once.
      if (app && signal === 'SIGTERM' && config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs);
      await closeAll();
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  // From the very start: a signal while the store opens still closes it properly.
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  try {
    let operatorToken: { token: string; created: boolean; path: string } | undefined;
    if (embedded) {
      try {
        takeEmbeddedLock(config.dataDir);
      } catch (err) {
        throw new ConfigError(`${(err as Error).message}.`, { cause: err });
      }
      locked = true;
      log.warn(
        `embedded store in ${config.dataDir} (PGlite, in a worker thread, one owner process): for trials and small installs; set DATABASE_URL for production`,
      );
      // The operator API is always on with the embedded store: with a token from ADMIN_TOKEN, or one kept in DATA_DIR.
      if (!config.adminToken) {
        operatorToken = ensureOperatorToken(config.dataDir);
        config.adminToken = operatorToken.token;
      }
    }
    try {
      db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, syncOnCommit: config.embeddedSync === 'commit', log });
      await migrate(db);
    } catch (err) {
      if (!config.databaseUrl) throw err;
      throw new ConfigError(`The PostgreSQL server in DATABASE_URL cannot be used (${rootCause(err)}).`, { cause: err });
    }
    if (stopping) return;

    app = await buildApp({ config, db, plans, logger: loggerOptions(config.logLevel) });
    await app.listen({ port: config.port, host: config.host });
    const port = (app.server.address() as { port: number }).port;
    const base = localUrl(config.host, port);
    if (embedded) writeServerUrl(config.dataDir, base);
    jobs = startJobs(db, backgroundJobs(config, plans), app.log);

    const demo = await seedDemo(db, plans, config, base);
    const lines = demo ?? [];
    lines.push('', `Console: ${base}/console/ (sign in with an API key)`);
    // Printed when it is made, or with the demo keys (a first start that failed to listen made it unseen).
    if (operatorToken && (operatorToken.created || demo)) {
      lines.push('', `Operator token (for /admin/v1 and npm run admin; kept in ${operatorToken.path}, readable by you only): ${operatorToken.token}`);
    }
    if (lines.length > 0) process.stdout.write(['', ...lines, ''].join('\n') + '\n');
  } catch (err) {
    await closeAll().catch(() => {});
    throw err;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    let config: Config | undefined;
    try {
      config = loadConfig();
    } catch {
      // the config error itself, printed below
    }
    const sentence = err instanceof ConfigError ? err : config ? startError(err, config) : undefined;
    if (sentence) console.error(`Tally did not start: ${sentence.message}`);
    else console.error(err);
    process.exit(1);
  });
}
