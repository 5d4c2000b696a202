import type { FastifyRequest } from 'fastify';
import { forbidden } from '../../errors.js';
import { funnelActorsPage, funnelUnitIds, idsCsv } from '../../query/behaviour/drill.js';
import { saveAsSegment } from '../../query/behaviour/segments.js';
import { funnel } from '../../query/behaviour/funnels.js';
import type { App, AppContext } from '../context.js';
import { answer, echoHeaders, funnelRows, sendCsv, wants } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, problems } from '../schemas/common.js';
import * as S from '../schemas/behaviour.js';

// Funnels: the query is the POST body (steps do not fit a query string). Thin handlers over
// src/query/behaviour/. Account and license answers pass the plan guard inside the query layer.
const tags = ['behaviour'];
const security = [{ bearer: [] }];
const errors = problems(400, 401, 402, 403, 404, 413, 415, 422);

/** Per-account and per-license answers need view_accounts besides read (CONTRACT.md, query side). */
export async function accountAnswersNeedViewAccounts(request: FastifyRequest) {
  const body = (request.body ?? {}) as Record<string, unknown>;
  // A segment's definition carries the same filters.
  const b = (typeof body.definition === 'object' && body.definition !== null ? body.definition : body) as Record<string, unknown>;
  const perAccount =
    b.account_id !== undefined || b.license_id !== undefined || b.count_by === 'account' || b.breakdown === 'account_id' || b.breakdown === 'license_id';
  if (perAccount && !principalOf(request).permissions.includes('view_accounts')) throw forbidden('view_accounts');
}

export function funnelRoutes(app: App, ctx: AppContext): void {
  const on = { onRequest: requireKey(ctx.db, ['read']), preValidation: onlyKnownParams(), preHandler: accountAnswersNeedViewAccounts };

  app.post(
    '/v1/funnels',
    {
      ...on,
      schema: {
        ...EXPORTS_CSV,
        summary: 'A funnel: per step count, conversion, drop-off and time to convert; trends, histogram, breakdown; steps as CSV with Accept: text/csv',
        description:
          'Units (actors with identity links applied, sessions or accounts) enter with a step-1 event in the range; later steps count within the conversion window from the entry, even past the range’s end. Each unit counts once, by its furthest attempt (the earliest on a tie). Exact, on raw events. docs/behaviour.md.',
        tags,
        security,
        body: S.FunnelQuery,
        response: { 200: S.FunnelResult, ...errors },
      },
    },
    async (request, reply) => answer(request, reply, 'funnel', await funnel(ctx.db, principalOf(request), request.body, ctx.now()), funnelRows),
  );

  app.post(
    '/v1/funnels/actors',
    {
      ...on,
      schema: {
        ...EXPORTS_CSV,
        summary: 'Who reached (or dropped at) a funnel step: ids, paged, or all as CSV (Accept: text/csv)',
        description: 'The body is the funnel’s query plus step, status and paging. With Accept: text/csv the whole list (up to 100,000 ids) comes as CSV.',
        tags,
        security,
        body: S.FunnelActorsQuery,
        response: { 200: S.unitPage(S.UnitRow), ...errors },
      },
    },
    async (request, reply) => {
      const who = principalOf(request);
      const { run, ids } = await funnelUnitIds(ctx.db, who, request.body, ctx.now());
      const save = request.body.save_as_segment;
      const segment_id = save ? await saveAsSegment(ctx.db, who.tenant, save, ids, run.query.count_by, ctx.now()) : undefined;
      const page = funnelActorsPage(run, ids, request.body, ctx.now());
      if (wants(request, 'text/csv')) {
        echoHeaders(reply, page, `funnel-step-${request.body.step}`, 'csv');
        return sendCsv(reply, `funnel-step-${request.body.step}`, idsCsv(`${run.query.count_by}_id`, ids));
      }
      return { ...page, ...(segment_id && { segment_id }) };
    },
  );
}
