import { paths } from '../../query/behaviour/paths.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { answer, pathRows } from '../csv.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, problems } from '../schemas/common.js';
import * as S from '../schemas/behaviour.js';
import { forbidden } from '../../errors.js';

// Paths: a GET, its few parameters fit the query string. Thin handler over src/query/behaviour/paths.ts.
export function pathRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/paths',
    {
      onRequest: requireKey(ctx.db, ['read']),
      preValidation: onlyKnownParams(S.PathsQuery),
      preHandler: async (request) => {
        const q = request.query as { account_id?: string; license_id?: string };
        if ((q.account_id !== undefined || q.license_id !== undefined) && !principalOf(request).permissions.includes('view_accounts'))
          throw forbidden('view_accounts');
      },
      schema: {
        ...EXPORTS_CSV,
        summary: 'The most common K events after (or before) an event, top N; CSV with Accept: text/csv',
        description: 'Per actor (identity links applied), over the range. docs/behaviour.md.',
        tags: ['behaviour'],
        security: [{ bearer: [] }],
        querystring: S.PathsQuery,
        response: { 200: S.PathsResult, ...problems(400, 401, 402, 403, 404, 422) },
      },
    },
    async (request, reply) => answer(request, reply, 'paths', await paths(ctx.db, principalOf(request), request.query, ctx.now()), pathRows),
  );
}
