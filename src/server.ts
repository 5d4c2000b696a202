import pino from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { buildApp, loggerOptions } from './app.js';
import { loadConfig, type Config } from './config.js';
import { createTenant } from './admin/operations.js';
import { loadPlans, type Plans } from './domain/plans.js';
import { openDb, type Db } from './storage/db.js';
import { migrate } from './storage/migrate.js';
import { releaseEmbeddedLock, takeEmbeddedLock } from './storage/embedded-lock.js';
import { insertProduct } from './storage/products.js';
import { countTenants } from './storage/tenants.js';
import { backgroundJobs } from './jobs/all.js';
import { startJobs } from './jobs/runner.js';

/** First start with an empty store: a demo tenant and product, and a curl that sends a first event. */
async function seedDemo(db: Db, plans: Plans, config: Config): Promise<string | undefined> {
  if ((await countTenants(db)) > 0) return undefined;
  const { tenant, api_keys } = await createTenant({ db, plans, trialDays: config.trialDays, settings: config }, { name: 'demo', plan: 'unlimited' });
  await insertProduct(db, tenant.id, 'demo-app', 'Demo app');
  const ingest = api_keys.find((k) => k.name === 'ingest')!;
  const admin = api_keys.find((k) => k.name === 'admin')!;
  const base = `http://localhost:${config.port}`;
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
    '',
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
    '',
  ].join('\n');
}

export async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino(loggerOptions(config.logLevel) as pino.LoggerOptions);
  const plans = loadPlans(config.plansFile);
  if (!config.databaseUrl) {
    takeEmbeddedLock(config.dataDir);
    log.warn(`embedded store in ${config.dataDir} (PGlite, in a worker thread, one owner process): for trials and small installs; set DATABASE_URL for production`);
  }
  const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, syncOnCommit: config.embeddedSync === 'commit' });
  await migrate(db);
  const banner = await seedDemo(db, plans, config);

  const app = await buildApp({ config, db, plans, logger: loggerOptions(config.logLevel) });
  const jobs = startJobs(db, backgroundJobs(config), app.log);
  await app.listen({ port: config.port, host: config.host });
  if (banner) process.stdout.write(banner + '\n');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: readiness off, draining in-flight requests');
    app.tally.ready.value = false;
    const force = setTimeout(() => {
      app.log.error('grace period over; exiting with requests still open');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    try {
      await app.close(); // stops accepting, answers 503 on kept-alive sockets, waits for in-flight requests
      await jobs.stop();
      await db.close();
      if (!config.databaseUrl) releaseEmbeddedLock(config.dataDir);
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
