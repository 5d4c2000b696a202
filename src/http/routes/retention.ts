import { idsCsv, pageIds } from '../../query/behaviour/drill.js';
import { retention, retentionUnitIds } from '../../query/behaviour/retention.js';
import { saveAsSegment } from '../../query/behaviour/segments.js';
import { asOf, echo } from '../../query/scope.js';
import type { App, AppContext } from '../context.js';
import { answer, echoHeaders, retentionRows, sendCsv, wants } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, problems } from '../schemas/common.js';
import * as S from '../schemas/behaviour.js';
import { accountAnswersNeedViewAccounts } from './funnels.js';

// Retention: the query is the POST body (start and return events with property filters). Thin
// handlers over src/query/behaviour/retention.ts.
const tags = ['behaviour'];
const security = [{ bearer: [] }];
const errors = problems(400, 401, 402, 403, 404, 413, 415, 422);

export function retentionRoutes(app: App, ctx: AppContext): void {
  const on = { onRequest: requireKey(ctx.db, ['read']), preValidation: onlyKnownParams(), preHandler: accountAnswersNeedViewAccounts };

  app.post(
    '/v1/retention',
    {
      ...on,
      schema: {
        ...EXPORTS_CSV,
        summary:
          'A retention matrix: cohorts by start event, counts and percentages per period, on and on-or-after; CSV (one row per cell) with Accept: text/csv',
        description: 'Exact, on raw events, in the query’s time zone. docs/behaviour.md.',
        tags,
        security,
        body: S.RetentionQuery,
        response: { 200: S.RetentionResult, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'retention', await retention(ctx.db, principalOf(request), request.body, ctx.now()), retentionRows),
  );

  app.post(
    '/v1/retention/actors',
    {
      ...on,
      schema: {
        ...EXPORTS_CSV,
        summary: 'Who is behind a retention cell: ids, paged, or all as CSV (Accept: text/csv)',
        tags,
        security,
        body: S.RetentionActorsQuery,
        response: { 200: S.unitPage(S.UnitRow), ...errors },
      },
    },
    async (request, reply) => {
      const { cohort, cohort_period, criteria, limit, cursor, save_as_segment, ...query } = request.body;
      const who = principalOf(request);
      const { plan, ids } = await retentionUnitIds(ctx.db, who, query, { cohort, period: cohort_period, criteria }, ctx.now());
      const segment_id = save_as_segment ? await saveAsSegment(ctx.db, who.tenant, save_as_segment, ids, plan.by, ctx.now()) : undefined;
      const head = {
        ...echo(plan.scope),
        interval: plan.period,
        refreshed_at: await asOf(ctx.db, who.tenant.id, plan.ctes?.readModel ?? false, ctx.now()),
      };
      if (wants(request, 'text/csv')) {
        echoHeaders(reply, head, `retention-${cohort}-${cohort_period}`, 'csv');
        return sendCsv(reply, `retention-${cohort}-${cohort_period}`, idsCsv(`${plan.by}_id`, ids));
      }
      return { count_by: plan.by, ...(segment_id && { segment_id }), ...pageIds(ids, { limit, cursor }), ...head };
    },
  );
}
