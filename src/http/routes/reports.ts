import type { TObject } from 'typebox';
import { activeActors, ActiveActorsQuery } from '../../query/reports/active-actors.js';
import { exceptionTrend, ExceptionTrendQuery } from '../../query/reports/exception-trend.js';
import { exceptionOccurrences, ExceptionOccurrencesQuery } from '../../query/reports/exception-occurrences.js';
import { trends, TrendsQuery } from '../../query/reports/trends.js';
import { accountsOverTime, AccountsOverTimeQuery, versionsReport, VersionsQuery } from '../../query/reports/versions.js';
import { ENV_FIELD_LIST, environmentShares, EnvironmentQuery } from '../../query/reports/environment.js';
import { Type } from 'typebox';
import { readOptions, type App, type AppContext } from '../context.js';
import { activeRows, answer, trendRows } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, problems } from '../schemas/common.js';
import * as S from '../schemas/reports.js';

// Thin handlers over src/query/reports: permission read; account and license filters and
// breakdowns check view_accounts, the plan and account context in the query layer (filters.ts).
const tags = ['reports'];
const security = [{ bearer: [] }];
const errors = problems(400, 401, 402, 403, 422);

export function reportRoutes(app: App, ctx: AppContext): void {
  const on = (querystring: TObject) => ({ onRequest: requireKey(ctx.db, ['read']), preValidation: onlyKnownParams(querystring) });

  app.get(
    '/v1/reports/trends',
    {
      ...on(TrendsQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'reportTrends',
        summary: 'Event counts and unique actors per interval, with one breakdown (top N and "other")',
        description: "Exact, from raw events in the time zone's own buckets. See docs/reports.md for the filter grammar.",
        tags,
        security,
        querystring: TrendsQuery,
        response: { 200: S.TrendsAnswer, ...errors },
      },
    },
    async (request, reply) =>
      answer(request, reply, 'trends', await trends(ctx.db, principalOf(request), request.query, ctx.now(), readOptions(ctx)), trendRows),
  );

  app.get(
    '/v1/reports/active-actors',
    {
      ...on(ActiveActorsQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'reportActiveActors',
        summary: 'Active actors: per interval, DAU/WAU/MAU rolling, stickiness, lifecycle',
        description: 'Interval day, week or month (hour is a 400). Lifecycle as PostHog defines it; new = first seen ever (any product) in that interval.',
        tags,
        security,
        querystring: ActiveActorsQuery,
        response: { 200: S.ActiveActorsAnswer, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'active-actors', await activeActors(ctx.db, principalOf(request), request.query, ctx.now()), activeRows),
  );

  app.get(
    '/v1/exceptions/:fingerprint',
    {
      ...on(ExceptionTrendQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'exceptionGroupTrend',
        summary: 'One exception group: occurrences and affected actors per interval, first and last version',
        tags: ['exceptions'],
        security,
        params: Type.Object({ fingerprint: Type.String({ minLength: 1, maxLength: 128 }) }),
        querystring: ExceptionTrendQuery,
        response: { 200: S.ExceptionTrend, ...problems(400, 401, 402, 403, 404, 422) },
      },
    },
    async (request, reply) =>
      answer(request, reply, 'exception-trend', await exceptionTrend(ctx.db, principalOf(request), request.params.fingerprint, request.query, ctx.now())),
  );

  app.get(
    '/v1/exceptions/:fingerprint/occurrences',
    {
      ...on(ExceptionOccurrencesQuery),
      schema: {
        operationId: 'exceptionGroupOccurrences',
        summary: "One exception group's occurrences in the range, newest first, with a cursor",
        description:
          "The group trend's filters and the group list's severity. account_id and license_id are left out of each occurrence for keys that may not see accounts. An unknown fingerprint is a 404.",
        tags: ['exceptions'],
        security,
        params: Type.Object({ fingerprint: Type.String({ minLength: 1, maxLength: 128 }) }),
        querystring: ExceptionOccurrencesQuery,
        response: { 200: S.ExceptionOccurrences, ...problems(400, 401, 402, 403, 404, 422) },
      },
    },
    async (request, reply) =>
      answer(
        request,
        reply,
        'exception-occurrences',
        await exceptionOccurrences(ctx.db, principalOf(request), request.params.fingerprint, request.query, ctx.now()),
      ),
  );

  app.get(
    '/v1/reports/versions',
    {
      ...on(VersionsQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'reportVersions',
        summary: 'Versions of a product: adoption over time, share on the latest, upgrade lag and accounts on archived versions',
        description:
          'product is required. upgrade_lag and archived_accounts are null for keys that may not see accounts (view_accounts, plan, account context).',
        tags,
        security,
        querystring: VersionsQuery,
        response: { 200: S.VersionsReport, ...errors },
      },
    },
    async (request, reply) =>
      answer(request, reply, 'versions', await versionsReport(ctx.db, principalOf(request), request.query, ctx.now()), (a) => a.adoption),
  );

  app.get(
    '/v1/reports/accounts',
    {
      ...on(AccountsOverTimeQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'reportAccounts',
        summary: 'Active accounts and licenses per interval (account plans)',
        tags,
        security,
        querystring: AccountsOverTimeQuery,
        response: { 200: S.AccountsOverTime, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'accounts', await accountsOverTime(ctx.db, principalOf(request), request.query, ctx.now())),
  );

  app.get(
    '/v1/environment/:field',
    {
      ...on(EnvironmentQuery),
      schema: {
        ...EXPORTS_CSV,
        operationId: 'environmentShares',
        summary: 'Active actors and sessions by an environment field (OS, runtime, browser, locale…)',
        description: "From X-Environment-Data or an exception's environment_context, the actor's latest; a session counts under its actor's environment.",
        tags: ['environment'],
        security,
        params: Type.Object({ field: Type.Enum(ENV_FIELD_LIST) }),
        querystring: EnvironmentQuery,
        response: { 200: S.EnvironmentShares, ...errors },
      },
    },
    async (request, reply) =>
      answer(request, reply, 'environment', await environmentShares(ctx.db, principalOf(request), request.params.field, request.query, ctx.now())),
  );
}
