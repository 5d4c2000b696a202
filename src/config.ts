// Reads the environment once, at start, and validates every setting against its schema (TypeBox);
// everything else receives a Config. A wrong value stops the start with one sentence naming the
// variable and what it takes (ConfigError), never a stack trace from deep inside a library.
import { getHeapStatistics } from 'node:v8';
import { Type, type TSchema } from 'typebox';
import { Value } from 'typebox/value';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  adminToken: string | undefined;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  plansFile: string | undefined;
  rollupIntervalSeconds: number;
  sessionTimeoutMinutes: number;
  quotaGraceHours: number;
  cancelGraceHours: number;
  trialDays: number;
  deadLetterRetentionDays: number;
  /** Raw events older than this many days are deleted by the retention job; 0 = kept forever. */
  eventRetentionDays: number;
  logLevel: LogLevel;
  /** One line per request at info (method, route, status, duration, tenant, request id). */
  accessLog: boolean;
  /** Embedded store only: "commit" fsyncs the WAL before every acknowledgement, "off" leaves it to the OS. */
  embeddedSync: 'commit' | 'off';
  shutdownGraceMs: number;
  /** SIGTERM: how long readiness answers 503 while requests are still served, before the listener closes (a balancer's probe notices first). */
  shutdownDelayMs: number;
  /** Overload protection: past any of these, ingestion and readiness answer 503 (0 = that check is off). */
  maxEventLoopDelayMs: number;
  /** How long the event-loop delay must stay past its limit before requests are shed. */
  overloadSustainMs: number;
  maxHeapUsedBytes: number;
  maxRssBytes: number;
  /** Rows per statement of the event export (GET /v1/events as NDJSON or CSV). */
  exportPageRows: number;
  /**
   * Raw events per statement of a report that reads them (src/query/reports/chunks.ts); 0: one statement. Unset: 5,000 on the
   * embedded store, 0 on PostgreSQL (src/http/context.ts, readOptions).
   */
  readChunkRows: number | undefined;
  /** What a report read in chunks may hold in memory at most, in cells; past it a 422. Unset: chunks.ts, DEFAULT_MAX_CELLS. */
  readChunkMaxCells: number | undefined;
  /** How long a report read in chunks may take in all; past it a 422. Unset: chunks.ts, DEFAULT_BUDGET_MS. */
  readChunkBudgetMs: number | undefined;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A setting that cannot be used: its message is one sentence, printed as it is. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

interface Setting {
  schema: TSchema;
  /** What the variable takes, for the error sentence. */
  takes: string;
}

const int = (minimum: number, maximum = Number.MAX_SAFE_INTEGER): TSchema => Type.Integer({ minimum, maximum });
const url = (...schemes: string[]): TSchema => Type.String({ pattern: `^(${schemes.join('|')})://.+` });
// Upper bounds where a larger value would not be honoured: a Node timer longer than 2^31 - 1 ms fires
// after 1 ms instead, and a date more than about 270,000 years away is not a date (a trial end, a
// retention cutoff). 100 years is past any real setting and keeps every date valid.
const TIMER_MAX_MS = 2_147_483_647;
const CENTURY_DAYS = 36_500;

/** Every setting the server reads. An unset or empty variable takes its default. */
const SETTINGS = {
  PORT: { schema: int(0, 65535), takes: 'a port number from 0 to 65535' },
  HOST: { schema: Type.String({ pattern: '^[A-Za-z0-9.:%\\[\\]-]+$' }), takes: 'an address or host name to listen on, e.g. 127.0.0.1 or 0.0.0.0' },
  DATA_DIR: { schema: Type.String({ minLength: 1 }), takes: 'a folder path' },
  DATABASE_URL: { schema: url('postgres', 'postgresql'), takes: 'a postgres:// URL' },
  REDIS_URL: { schema: url('redis', 'rediss'), takes: 'a redis:// or rediss:// URL' },
  ADMIN_TOKEN: { schema: Type.String({ minLength: 8 }), takes: 'a secret of at least 8 characters' },
  METRICS_TOKEN: { schema: Type.String({ minLength: 8 }), takes: 'a secret of at least 8 characters' },
  PLANS_FILE: { schema: Type.String({ minLength: 1 }), takes: 'the path of a JSON file' },
  ROLLUP_INTERVAL_SECONDS: { schema: int(1, Math.floor(TIMER_MAX_MS / 1000)), takes: 'a whole number of seconds from 1 to 2147483 (about 24 days)' },
  SESSION_TIMEOUT_MINUTES: { schema: int(1, CENTURY_DAYS * 1440), takes: 'a whole number of minutes from 1 to 52560000 (100 years)' },
  QUOTA_GRACE_HOURS: { schema: int(0), takes: 'a whole number of hours, 0 or more' },
  CANCEL_GRACE_HOURS: { schema: int(0), takes: 'a whole number of hours, 0 or more' },
  TRIAL_DAYS: { schema: int(0, CENTURY_DAYS), takes: 'a whole number of days from 0 to 36500' },
  DEAD_LETTER_RETENTION_DAYS: { schema: int(1, CENTURY_DAYS), takes: 'a whole number of days from 1 to 36500' },
  EVENT_RETENTION_DAYS: { schema: int(0, CENTURY_DAYS), takes: 'a whole number of days from 0 (keep forever) to 36500' },
  LOG_LEVEL: { schema: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))), takes: `one of ${LOG_LEVELS.join(', ')}` },
  ACCESS_LOG: { schema: Type.Boolean(), takes: 'true or false' },
  EMBEDDED_SYNC: { schema: Type.Union([Type.Literal('commit'), Type.Literal('off')]), takes: 'commit or off' },
  // Their sum is one timer (src/server.ts).
  SHUTDOWN_GRACE_MS: { schema: int(0, Math.floor(TIMER_MAX_MS / 2)), takes: 'a whole number of milliseconds from 0 to 1073741823' },
  SHUTDOWN_DELAY_MS: { schema: int(0, Math.floor(TIMER_MAX_MS / 2)), takes: 'a whole number of milliseconds from 0 to 1073741823' },
  MAX_EVENT_LOOP_DELAY_MS: { schema: int(0), takes: 'a whole number of milliseconds (0 turns the check off)' },
  OVERLOAD_SUSTAIN_MS: { schema: int(0), takes: 'a whole number of milliseconds the event-loop delay must last before requests are shed' },
  MAX_HEAP_USED_BYTES: { schema: int(0), takes: 'a whole number of bytes (0 turns the check off)' },
  MAX_RSS_BYTES: { schema: int(0), takes: 'a whole number of bytes (0 turns the check off)' },
  EXPORT_PAGE_ROWS: { schema: int(1, 100_000), takes: 'a whole number of rows from 1 to 100000' },
  READ_CHUNK_ROWS: { schema: int(0, 10_000_000), takes: 'a whole number of events from 0 (one statement) to 10000000' },
  READ_CHUNK_MAX_CELLS: { schema: int(1, 100_000_000), takes: 'a whole number from 1 to 100000000' },
  READ_CHUNK_BUDGET_MS: { schema: int(1, 600_000), takes: 'a whole number of milliseconds from 1 to 600000' },
} satisfies Record<string, Setting>;

type Name = keyof typeof SETTINGS;

/** The environment's text as the schema's type: strict, so "1.5" is not an integer and "yes" is not a boolean. */
function fromText(schema: TSchema, raw: string): unknown {
  const type = (schema as { type?: string }).type;
  if (type === 'integer') return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (type === 'boolean') return ({ true: true, false: false, '1': true, '0': false } as Record<string, boolean>)[raw.trim().toLowerCase()] ?? raw;
  return raw;
}

function read(env: NodeJS.ProcessEnv, name: Name): unknown {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const { schema, takes } = SETTINGS[name] as Setting;
  const value = fromText(schema, raw);
  if (!Value.Check(schema, value)) {
    const shown = name.includes('TOKEN') ? 'a value' : `"${raw.length > 60 ? raw.slice(0, 60) + '…' : raw}"`;
    throw new ConfigError(`${name} takes ${takes}, but it is set to ${shown}.`);
  }
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const get = <T>(name: Name, fallback: T): T => (read(env, name) as T | undefined) ?? fallback;
  const optional = (name: Name): string | undefined => read(env, name) as string | undefined;
  return {
    port: get('PORT', 8080),
    // Loopback by default: a laptop trial is not reachable from the network until HOST says so
    // (HOST=0.0.0.0 in containers and behind a proxy on another machine; docs/deploy.md).
    host: get('HOST', '127.0.0.1'),
    dataDir: get('DATA_DIR', './data'),
    databaseUrl: optional('DATABASE_URL'),
    redisUrl: optional('REDIS_URL'),
    adminToken: optional('ADMIN_TOKEN'),
    metricsToken: optional('METRICS_TOKEN'),
    plansFile: optional('PLANS_FILE'),
    rollupIntervalSeconds: get('ROLLUP_INTERVAL_SECONDS', 60),
    sessionTimeoutMinutes: get('SESSION_TIMEOUT_MINUTES', 1440),
    quotaGraceHours: get('QUOTA_GRACE_HOURS', 72),
    cancelGraceHours: get('CANCEL_GRACE_HOURS', 168),
    trialDays: get('TRIAL_DAYS', 21),
    deadLetterRetentionDays: get('DEAD_LETTER_RETENTION_DAYS', 30),
    eventRetentionDays: get('EVENT_RETENTION_DAYS', 0),
    logLevel: get('LOG_LEVEL', 'info'),
    accessLog: get('ACCESS_LOG', true),
    embeddedSync: get('EMBEDDED_SYNC', 'commit'),
    shutdownGraceMs: get('SHUTDOWN_GRACE_MS', 10_000),
    shutdownDelayMs: get('SHUTDOWN_DELAY_MS', 1000),
    maxEventLoopDelayMs: get('MAX_EVENT_LOOP_DELAY_MS', 1000),
    overloadSustainMs: get('OVERLOAD_SUSTAIN_MS', 3000),
    // Default: 90 % of V8's heap limit, so we refuse work before the process dies of it.
    maxHeapUsedBytes: get('MAX_HEAP_USED_BYTES', Math.floor(getHeapStatistics().heap_size_limit * 0.9)),
    maxRssBytes: get('MAX_RSS_BYTES', 0),
    exportPageRows: get('EXPORT_PAGE_ROWS', 5_000),
    readChunkRows: read(env, 'READ_CHUNK_ROWS') as number | undefined,
    readChunkMaxCells: read(env, 'READ_CHUNK_MAX_CELLS') as number | undefined,
    readChunkBudgetMs: read(env, 'READ_CHUNK_BUDGET_MS') as number | undefined,
  };
}
