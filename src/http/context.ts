import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../config.js';
import type { Plans } from '../domain/plans.js';
import type { EventIngest } from '../ingest/pipeline.js';
import type { Db } from '../storage/db.js';
import { DEFAULT_CHUNK_ROWS, type ReadOptions } from '../query/reports/chunks.js';
import type { Metrics } from './plugins/metrics.js';
import type { RateLimiter } from './plugins/rate-limit.js';

/** What every route module receives from buildApp. */
export interface AppContext {
  config: Config;
  db: Db;
  plans: Plans;
  limiter: RateLimiter;
  /** The event pipeline, with what it remembers between batches. */
  events: EventIngest;
  metrics: Metrics;
  now: () => Date;
  /** False once shutdown has begun: readiness fails first. */
  ready: { value: boolean };
}

/**
 * Raw events per statement of a report that reads them (READ_CHUNK_ROWS): chunks on the embedded store, whose one connection a
 * statement holds to its end, one statement on PostgreSQL (docs/embedded-store.md, "A long read").
 */
export const readOptions = (ctx: AppContext): ReadOptions => ({
  chunkRows: ctx.config.readChunkRows ?? (ctx.db.kind === 'pglite' ? DEFAULT_CHUNK_ROWS : 0),
  maxCells: ctx.config.readChunkMaxCells,
  budgetMs: ctx.config.readChunkBudgetMs,
});

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  import('fastify').FastifyBaseLogger,
  TypeBoxTypeProvider
>;
