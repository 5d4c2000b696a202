import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Config } from './config.js';
import { AppError, queryTooLarge, StatementTimeoutError, validationError } from './errors.js';
import type { Plans } from './domain/plans.js';
import { LIMITS } from './domain/record-rules.js';
import type { Db } from './storage/db.js';
import { createEventIngest } from './ingest/pipeline.js';
import type { App, AppContext } from './http/context.js';
import { registerClosingRefusal } from './http/plugins/closing.js';
import { registerDeferredContinue } from './http/plugins/continue.js';
import { registerCors } from './http/plugins/cors.js';
import { registerErrorHandling, sendProblem } from './http/plugins/errors.js';
import { registerMetrics } from './http/plugins/metrics.js';
import { registerAccessLog } from './http/plugins/access-log.js';
import { openapiTransforms } from './http/openapi.js';
import { registerOverloadProtection } from './http/plugins/overload.js';
import { createRateLimiter, type RateLimiter } from './http/plugins/rate-limit.js';
import { adminRoutes } from './http/routes/admin.js';
import { eventRoutes, refuseEncodedBody } from './http/routes/events.js';
import { healthRoutes } from './http/routes/health.js';
import { invalidEventRoutes } from './http/routes/invalid-events.js';
import { usageRoutes } from './http/routes/usage.js';
import { productRoutes } from './http/routes/products.js';
import { versionRoutes } from './http/routes/versions.js';
import { recordRoutes } from './http/routes/records.js';
import { allowlistRoutes } from './http/routes/allowlists.js';
import { accountRoutes } from './http/routes/accounts.js';
import { exceptionRoutes } from './http/routes/exceptions.js';
import { funnelRoutes } from './http/routes/funnels.js';
import { retentionRoutes } from './http/routes/retention.js';
import { segmentRoutes } from './http/routes/segments.js';
import { pathRoutes } from './http/routes/paths.js';
import { reportRoutes } from './http/routes/reports.js';
import { sessionQueryRoutes } from './http/routes/sessions.js';
import { explorerRoutes } from './http/routes/explorer.js';
import { registerEnvironment } from './http/plugins/environment.js';
import { registerReadLane } from './http/plugins/read-lane.js';
import { registerInputGuard } from './http/plugins/input-guard.js';
import { registerConsole } from './http/plugins/console.js';
import { isCalendarDate, isRfc3339, isUuidText } from './domain/text.js';
import { overflowUnderflows } from './domain/json-numbers.js';
import { dataRightsRoutes } from './http/routes/data-rights.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * ajv-formats, with the three formats that reach SQL replaced by the service's own rules, so a
 * value the schema passes is one PostgreSQL takes: dates in years 1–9999 that exist (no Feb 30,
 * no year 0000 or +275760), offsets within ±15:59, and UUIDs without a urn: prefix.
 */
function withFormats(ajv: Ajv): Ajv {
  addFormats(ajv);
  ajv.addFormat('date-time', { type: 'string', validate: isRfc3339 });
  ajv.addFormat('date', { type: 'string', validate: isCalendarDate });
  ajv.addFormat('uuid', { type: 'string', validate: isUuidText });
  return ajv;
}

export interface AppDeps {
  config: Config;
  db: Db;
  plans: Plans;
  limiter?: RateLimiter;
  logger?: FastifyServerOptions['logger'];
  now?: () => Date;
  /** How long a whole request may take to arrive (slow headers or body): 30 s unless a test shortens it. */
  requestTimeoutMs?: number;
}

/** Logs never carry the API key: no headers, and no query string (where a misplaced key could sit). */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: ['req.headers.authorization', 'req.headers["x-environment-data"]'],
    serializers: {
      req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url.split('?')[0] }),
    },
  };
}

/** Each connection's request in flight, with its response (Node answers a connection's requests one at a time). */
const inFlight = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();

function trackRequests(server: Server): void {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    inFlight.set(socket, { req, res });
    res.once('close', () => {
      if (inFlight.get(socket)?.req === req) inFlight.delete(socket);
    });
  });
}

/**
 * A request Node could not read whole (timed out, malformed): problem+json like every other error,
 * then close. A batch whose body broke off on the wire is `invalid_batch`, as a body cut short
 * inside its JSON is (BAD-INPUTS.md, line 1). Bytes that break after a whole request (a pipelined
 * request that cannot be parsed) are answered after that request's own answer, never in its place.
 */
function answerClientError(err: Error, socket: Socket): void {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) {
    socket.destroy();
    return;
  }
  const timeout = code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const current = inFlight.get(socket);
  if (current && current.req.complete && !timeout && !current.res.writableFinished) {
    current.res.once('close', () => answerClientError(err, socket));
    return;
  }
  const broken = current && !current.req.complete ? current.req : undefined;
  const batch = broken?.method === 'POST' && broken.url?.split('?')[0] === '/v1/events';
  const [status, title, problem] = timeout
    ? [408, 'Request Timeout', 'request_timeout']
    : batch
      ? [400, 'Bad Request', 'invalid_batch']
      : [400, 'Bad Request', 'invalid_request'];
  const body = JSON.stringify({
    type: `https://tally.dev/errors/${problem}`,
    title,
    status,
    code: problem,
    detail: timeout ? 'the request did not arrive in time' : batch ? 'the batch did not arrive whole' : 'the request could not be parsed',
  });
  // The request's path is not known for sure here, so the CORS headers every ingestion route's
  // errors carry (CONTRACT.md) go on all of these: a browser then sees the status. Keys are bearer
  // tokens, never cookies, so `*` exposes nothing.
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Access-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: Retry-After\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.destroySoon();
}

/** Builds the app without listening: the server and the tests use the same thing. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const requestTimeout = deps.requestTimeoutMs ?? 30_000;
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: LIMITS.bodyBytes,
    // Slow clients: a request, headers and body, must arrive whole within 30 s; idle sockets close
    // after 75 s. Node's own headersTimeout (60 s) would otherwise win over requestTimeout, and it
    // only looks for expired requests every 30 s.
    requestTimeout,
    // Headers up to 64 KiB (Node's default is 16 KiB): an X-Environment-Data header of up to 16 KB
    // decoded (about 22 KB of base64) must reach the server to be ignored or kept, never refuse the
    // batch it came with (CONTRACT.md). HTTP/1.1 without Host is answered as any request, not by
    // Node's bare 400.
    http: { headersTimeout: requestTimeout, connectionsCheckingInterval: Math.min(1_000, requestTimeout), maxHeaderSize: 64 * 1024, requireHostHeader: false },
    clientErrorHandler: answerClientError,
    // Account and license ids are up to 256 characters, up to 12 bytes each once percent-encoded.
    routerOptions: { maxParamLength: 3072 },
    // The router's own refusals, decided before the key is read: the path is not echoed (it may be kilobytes).
    frameworkErrors: (err, _request, reply) => {
      if (err.code === 'FST_ERR_BAD_URL') return sendProblem(reply, 400, 'invalid_request', 'the path is not valid percent-encoded UTF-8');
      const message = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path parameter is longer than 3,072 characters' : 'the path cannot be routed';
      return sendProblem(reply, 400, 'validation_error', `path: ${message}`, { errors: [{ field: 'path', message }] });
    },
    connectionTimeout: 75_000,
    keepAliveTimeout: 72_000,
    // Requests that reach a closing server get problem+json with Retry-After (plugins/closing.ts).
    return503OnClosing: false,
    // Fastify's own two lines per request are off: the access log (ACCESS_LOG) writes one, with
    // the route template and the tenant; errors and 5xx are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    // A proxy's X-Request-Id is kept when it looks like one; otherwise a UUID. Echoed in the answer.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,100}$/.test(given) ? given : randomUUID();
    },
    ajv: { customOptions: { coerceTypes: 'array' } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are never coerced (42 must not become "42"); query strings and path params are.
  const bodyAjv = withFormats(new Ajv({ coerceTypes: false, useDefaults: true, strict: false, allErrors: false }));
  const paramAjv = withFormats(new Ajv({ coerceTypes: 'array', useDefaults: true, strict: false, allErrors: false }));
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema));

  // A plain JSON.parse: Fastify's default scans the parsed body for __proto__ and fails the whole
  // request; the per-element checks reject such an element alone, which is both faster and what
  // CONTRACT.md asks. JSON.parse itself creates "__proto__" as an ordinary own key, never a prototype.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
    const batch = request.routeOptions.url === '/v1/events';
    // Bytes that are not UTF-8 are refused naming body (docs/api.md), not read as U+FFFD and stored;
    // a batch's stay as Node decodes them (each element is judged alone).
    let body: string;
    try {
      body = batch ? (raw as Buffer).toString('utf8') : utf8.decode(raw as Buffer);
    } catch {
      return done(validationError([{ field: 'body', message: 'is not valid UTF-8' }]), undefined);
    }
    // No body at all under a JSON Content-Type (a client that sets the header on every request, a
    // DELETE or a subscription's cancel among them) is no body: a route that needs one says so,
    // naming body (400; 422 on the routes that judge one record). A batch's empty body stays
    // invalid_batch (BAD-INPUTS.md 1).
    if (!batch && body.trim() === '') return done(null, undefined);
    try {
      // An underflowing number (1e-400) is made one that overflows: rejected as 1e400 is, not stored as 0.
      done(null, JSON.parse(overflowUnderflows(body)));
    } catch {
      // A batch's 400 is invalid_batch; elsewhere validation_error, with the field it names (CONTRACT.md).
      done(
        new AppError(400, batch ? 'invalid_batch' : 'validation_error', 'the body is not valid JSON', {
          ...(batch ? {} : { errors: [{ field: 'body', message: 'is not valid JSON' }] }),
        }),
        undefined,
      );
    }
  });

  const ctx: AppContext = {
    config: deps.config,
    db: deps.db,
    plans: deps.plans,
    limiter: deps.limiter ?? createRateLimiter({ redisUrl: deps.config.redisUrl, log: app.log }),
    events: createEventIngest(deps.db, app.log),
    metrics: registerMetrics(app, deps.config.metricsToken),
    now: deps.now ?? (() => new Date()),
    ready: { value: true },
  };
  app.decorate('tally', ctx);
  app.decorateRequest('principal', null);

  await app.register(swagger, {
    ...openapiTransforms,
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tally',
        version: '1',
        description: 'Product analytics ingestion and query API. Errors are RFC 9457 problem+json with a `code`. See docs/api.md.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'A tenant API key (tk_live_…)' },
          admin: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // Every body is plain JSON, as ingestion's (which refuses a compressed one before its rate limit):
  // elsewhere a compressed body was read as JSON and called invalid, or taken with its header ignored.
  // After each route's own onRequest hooks (the key first), before the body is read.
  app.addHook('preParsing', async (request, _reply, payload) => {
    const length = request.headers['content-length'];
    if ((length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined) await refuseEncodedBody(request);
    return payload;
  });
  if (deps.config.accessLog) registerAccessLog(app);
  registerErrorHandling(app);
  registerClosingRefusal(app);
  registerDeferredContinue(app);
  trackRequests(app.server);
  registerInputGuard(app);
  registerReadLane(app);
  await registerOverloadProtection(app, ctx);
  registerCors(app);
  registerEnvironment(app, ctx);
  healthRoutes(app, ctx);
  eventRoutes(app, ctx);
  productRoutes(app, ctx);
  versionRoutes(app, ctx);
  recordRoutes(app, ctx);
  allowlistRoutes(app, ctx);
  // The read side, in a scope of its own: a statement the store cancelled at its statement
  // timeout is a 422 query_too_large here (CONTRACT.md), and a 503 everywhere else (a write that
  // slow means a store in trouble: its client retries), the read side's own writes (routes marked
  // `write`: saving, changing or deleting a segment) included. The one place that mapping lives.
  await app.register(async (reads: App) => {
    reads.setErrorHandler((err, request) => {
      // A zone the server's Intl knows and the store does not (validTimeZone refuses those known; a
      // store with older tzdata than Node's may lack a new one): the caller's tz, not a 500.
      if (err instanceof Error && (err as { code?: string }).code === '22023' && /^time zone ".*" not recognized$/.test(err.message))
        throw validationError([{ field: 'tz', message: 'a time zone name this store does not know' }]);
      throw err instanceof StatementTimeoutError && !request.routeOptions.config.write ? queryTooLarge() : err;
    });
    accountRoutes(reads, ctx);
    exceptionRoutes(reads, ctx);
    funnelRoutes(reads, ctx);
    retentionRoutes(reads, ctx);
    segmentRoutes(reads, ctx);
    pathRoutes(reads, ctx);
    reportRoutes(reads, ctx);
    sessionQueryRoutes(reads, ctx);
    explorerRoutes(reads, ctx);
  });
  invalidEventRoutes(app, ctx);
  usageRoutes(app, ctx);
  dataRightsRoutes(app, ctx);
  adminRoutes(app, ctx);
  registerConsole(app);
  app.addHook('onClose', async () => {
    if (!deps.limiter) await ctx.limiter.close();
  });
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    tally: AppContext;
  }
}
