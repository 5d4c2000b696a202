import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { exceptionGroupsQuery } from '../../query/exceptions.js';
import { requireAccountAnswers } from '../../query/guard.js';
import type { App, AppContext } from '../context.js';
import { answer } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, problems } from '../schemas/common.js';
import { ExceptionGroups, ExceptionQuery } from '../schemas/accounts.js';

type Query = Static<typeof ExceptionQuery>;

export function exceptionRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/exceptions',
    {
      onRequest: [
        requireKey(ctx.db, ['read']),
        // account_id / license_id filters are per-account answers: view_accounts, then the plan and account context.
        async (request: FastifyRequest) => {
          const q = request.query as Query;
          if (q.account_id !== undefined || q.license_id !== undefined) requireAccountAnswers(principalOf(request));
        },
      ],
      preValidation: onlyKnownParams(ExceptionQuery),
      schema: {
        ...EXPORTS_CSV,
        summary: 'Exception groups by fingerprint; a page as CSV with Accept: text/csv (the next page’s cursor in X-Next-Cursor)',
        description:
          "Count, affected actors, first and last seen, versions and the latest occurrence of each group; newest first. The range is `range` or `from`/`to` in `tz` (the query side's), or `since`/`until`; with none, the whole history.",
        tags: ['exceptions'],
        security: [{ bearer: [] }],
        querystring: ExceptionQuery,
        response: { 200: ExceptionGroups, ...problems(400, 401, 402, 403) },
      },
    },
    async (request, reply) =>
      answer(request, reply, 'exceptions', await exceptionGroupsQuery(ctx.db, principalOf(request).tenant.id, request.query, ctx.now())),
  );
}
