import { listSessions, releaseHealth, ReleaseHealthQuery, SessionListQuery, sessionStats, SessionStatsQuery } from '../../query/reports/sessions.js';
import type { App, AppContext } from '../context.js';
import { answer } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, problems } from '../schemas/common.js';
import * as S from '../schemas/reports.js';

// Thin handlers over src/query/reports/sessions.ts (permission read; account filters as reports).
const tags = ['sessions'];
const security = [{ bearer: [] }];
const errors = problems(400, 401, 402, 403, 422);

export function sessionQueryRoutes(app: App, ctx: AppContext): void {
  const onRequest = requireKey(ctx.db, ['read']);

  app.get(
    '/v1/sessions',
    {
      onRequest,
      preValidation: onlyKnownParams(SessionListQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'listSessions',
        summary: 'Sessions started in the range, newest first',
        tags,
        security,
        querystring: SessionListQuery,
        response: { 200: S.SessionPage, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'sessions', await listSessions(ctx.db, principalOf(request), request.query, ctx.now())),
  );

  app.get(
    '/v1/sessions/stats',
    {
      onRequest,
      preValidation: onlyKnownParams(SessionStatsQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'sessionStats',
        summary: 'Session count per interval, duration p50/p90/p99, end reasons and statuses',
        tags,
        security,
        querystring: SessionStatsQuery,
        response: { 200: S.SessionStats, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'session-stats', await sessionStats(ctx.db, principalOf(request), request.query, ctx.now())),
  );

  app.get(
    '/v1/sessions/release-health',
    {
      onRequest,
      preValidation: onlyKnownParams(ReleaseHealthQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'releaseHealth',
        summary: "Crash-free sessions and actors and adoption per version (Sentry's release health)",
        tags,
        security,
        querystring: ReleaseHealthQuery,
        response: { 200: S.ReleaseHealth, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'release-health', await releaseHealth(ctx.db, principalOf(request), request.query, ctx.now())),
  );
}
