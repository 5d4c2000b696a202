import { Type } from 'typebox';
import { isUuidText } from '../../domain/text.js';
import { notFound, validationError } from '../../errors.js';
import { idsCsv } from '../../query/behaviour/drill.js';
import { allSegmentActors, checkDefinition, segmentActors, segmentSize, type SegmentDefinition } from '../../query/behaviour/segments.js';
import { cursorKey, pageOf } from '../../query/page.js';
import { deleteSegment, getSegment, insertSegment, listSegments, updateSegment } from '../../storage/segments.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV, IdParams, page, problems } from '../schemas/common.js';
import * as S from '../schemas/behaviour.js';
import { echoHeaders, sendCsv, wants } from '../csv.js';
import { accountAnswersNeedViewAccounts } from './funnels.js';

// Saved segments: CRUD, size and members. Permission read, also for saving (CONTRACT.md).
const tags = ['behaviour'];
const security = [{ bearer: [] }];
const Page = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
});
const missing = () => notFound('not_found', 'segment');

export function segmentRoutes(app: App, ctx: AppContext): void {
  const read = requireKey(ctx.db, ['read']);
  const on = (q?: typeof Page) => ({ onRequest: read, preValidation: onlyKnownParams(q), preHandler: accountAnswersNeedViewAccounts });

  app.post(
    '/v1/segments',
    {
      ...on(),
      config: { write: true },
      schema: {
        summary: 'Save a segment (a definition of actors)',
        tags,
        security,
        body: S.SegmentCreate,
        response: { 201: S.Segment, ...problems(400, 401, 402, 403, 413, 415) },
      },
    },
    async (request, reply) => {
      const tenant = principalOf(request).tenant;
      checkDefinition(tenant, request.body.definition as SegmentDefinition, ctx.now());
      return reply.code(201).send(await insertSegment(ctx.db, tenant.id, request.body, ctx.now()));
    },
  );

  app.get(
    '/v1/segments',
    {
      ...on(Page),
      schema: { summary: 'Saved segments, oldest first', tags, security, querystring: Page, response: { 200: page(S.Segment), ...problems(400, 401, 403) } },
    },
    async (request) => {
      const limit = request.query.limit ?? 50;
      const after = cursorKey(request.query.cursor, ['text'])?.[0];
      if (after !== undefined && !isUuidText(after)) throw validationError([{ field: 'cursor', message: 'invalid' }]);
      const rows = await listSegments(ctx.db, principalOf(request).tenant.id, after, limit + 1);
      return pageOf(rows, limit, (r) => [r.id]);
    },
  );

  app.get(
    '/v1/segments/:id',
    { ...on(), schema: { summary: 'One saved segment', tags, security, params: IdParams, response: { 200: S.Segment, ...problems(400, 401, 403, 404) } } },
    async (request) => {
      return (await getSegment(ctx.db, principalOf(request).tenant.id, request.params.id)) ?? Promise.reject(missing());
    },
  );

  app.patch(
    '/v1/segments/:id',
    {
      ...on(),
      config: { write: true },
      schema: {
        summary: 'Change a segment’s name, description or definition',
        tags,
        security,
        params: IdParams,
        body: S.SegmentUpdate,
        response: { 200: S.Segment, ...problems(400, 401, 402, 403, 404, 413, 415) },
      },
    },
    async (request) => {
      const tenant = principalOf(request).tenant;
      const seg = await getSegment(ctx.db, tenant.id, request.params.id);
      if (!seg) throw missing();
      if (request.body.definition !== undefined) {
        if (seg.static) throw validationError([{ field: 'definition', message: 'a static segment (a saved list) has no definition to change' }]);
        checkDefinition(tenant, request.body.definition as SegmentDefinition, ctx.now());
      }
      return (await updateSegment(ctx.db, tenant.id, seg.id, request.body, ctx.now())) ?? Promise.reject(missing());
    },
  );

  app.delete(
    '/v1/segments/:id',
    {
      ...on(),
      config: { write: true },
      schema: { summary: 'Delete a segment', tags, security, params: IdParams, response: { 204: Type.Null(), ...problems(400, 401, 403, 404) } },
    },
    async (request, reply) => {
      if (!(await deleteSegment(ctx.db, principalOf(request).tenant.id, request.params.id))) throw missing();
      return reply.code(204).send(null as never);
    },
  );

  app.get(
    '/v1/segments/:id/size',
    {
      ...on(),
      schema: {
        summary: 'How many actors the segment holds now',
        tags,
        security,
        params: IdParams,
        response: { 200: S.SegmentSize, ...problems(400, 401, 402, 403, 404, 422) },
      },
    },
    async (request) => segmentSize(ctx.db, principalOf(request), request.params.id, ctx.now()),
  );

  app.get(
    '/v1/segments/:id/actors',
    {
      ...on(Page),
      schema: {
        ...EXPORTS_CSV,
        summary: 'The segment’s actors, paged by id, or all as CSV (Accept: text/csv, up to 100,000)',
        tags,
        security,
        params: IdParams,
        querystring: Page,
        response: { 200: S.SegmentActors, ...problems(400, 401, 402, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const who = principalOf(request);
      if (!wants(request, 'text/csv')) return segmentActors(ctx.db, who, request.params.id, request.query, ctx.now());
      const { ids, ...head } = await allSegmentActors(ctx.db, who, request.params.id, ctx.now());
      echoHeaders(reply, head, `segment-${request.params.id}`, 'csv');
      return sendCsv(reply, `segment-${request.params.id}`, idsCsv('actor_id', ids));
    },
  );
}
