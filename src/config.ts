// Reads the environment once; everything else receives a Config.
import { getHeapStatistics } from 'node:v8';
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  adminToken: string | undefined;
  plansFile: string | undefined;
  rollupIntervalSeconds: number;
  sessionTimeoutMinutes: number;
  quotaGraceHours: number;
  cancelGraceHours: number;
  trialDays: number;
  deadLetterRetentionDays: number;
  logLevel: string;
  /** Embedded store only: "commit" fsyncs the WAL before every acknowledgement, "off" leaves it to the OS. */
  embeddedSync: 'commit' | 'off';
  shutdownGraceMs: number;
  /** Overload protection: past any of these, ingestion and readiness answer 503 (0 = that check is off). */
  maxEventLoopDelayMs: number;
  /** How long the event-loop delay must stay past its limit before requests are shed. */
  overloadSustainMs: number;
  maxHeapUsedBytes: number;
  maxRssBytes: number;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const sync = env.EMBEDDED_SYNC ?? 'commit';
  if (sync !== 'commit' && sync !== 'off') throw new Error('EMBEDDED_SYNC must be "commit" or "off"');
  return {
    port: int(env, 'PORT', 8080),
    host: env.HOST ?? '0.0.0.0',
    dataDir: env.DATA_DIR ?? './data',
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    adminToken: env.ADMIN_TOKEN || undefined,
    plansFile: env.PLANS_FILE || undefined,
    rollupIntervalSeconds: int(env, 'ROLLUP_INTERVAL_SECONDS', 60),
    sessionTimeoutMinutes: int(env, 'SESSION_TIMEOUT_MINUTES', 1440),
    quotaGraceHours: int(env, 'QUOTA_GRACE_HOURS', 72),
    cancelGraceHours: int(env, 'CANCEL_GRACE_HOURS', 168),
    trialDays: int(env, 'TRIAL_DAYS', 21),
    deadLetterRetentionDays: int(env, 'DEAD_LETTER_RETENTION_DAYS', 30),
    logLevel: env.LOG_LEVEL ?? 'info',
    embeddedSync: sync,
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000),
    maxEventLoopDelayMs: int(env, 'MAX_EVENT_LOOP_DELAY_MS', 1000),
    overloadSustainMs: int(env, 'OVERLOAD_SUSTAIN_MS', 3000),
    // Default: 90 % of V8's heap limit, so we refuse work before the process dies of it.
    maxHeapUsedBytes: int(env, 'MAX_HEAP_USED_BYTES', Math.floor(getHeapStatistics().heap_size_limit * 0.9)),
    maxRssBytes: int(env, 'MAX_RSS_BYTES', 0),
  };
}
