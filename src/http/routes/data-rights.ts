import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { isUuidText } from '../../domain/text.js';
import { notFound } from '../../errors.js';
import { exportActor, getErasure, requestErasure, type ErasureRow } from '../../storage/data-rights.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { problems } from '../schemas/common.js';
import { ActorParams, Erasure } from '../schemas/data-rights.js';

const tags = ['data rights'];
const security = [{ bearer: [] }];

const view = (e: ErasureRow) => ({ ...e, status_url: `/v1/actor-erasures/${e.id}` });

/** An end user's rights, exercised by the vendor on their behalf (docs/data-rights.md). */
export function dataRightsRoutes(app: App, ctx: AppContext): void {
  const canManage = requireKey(ctx.db, ['manage_products']);
  const noParams = onlyKnownParams();

  app.delete(
    '/v1/actors/:actorId',
    {
      onRequest: canManage,
      // A misspelt parameter on an erasure is refused before anything is queued.
      preValidation: noParams,
      schema: {
        summary: "Erase an actor's data",
        description:
          'Erases the actor, the anonymous ids linked to it and its identity links from raw and derived data, in the background. 202 with a status URL; the request is audited (the audit keeps a digest of the actor id, not the id).',
        tags,
        security,
        params: ActorParams,
        response: { 202: Erasure, ...problems(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { tenant, keyId } = principalOf(request);
      const erasure = view(await requestErasure(ctx.db, tenant.id, request.params.actorId, keyId, ctx.now()));
      return reply.code(202).header('location', erasure.status_url).send(erasure);
    },
  );

  app.get(
    '/v1/actor-erasures/:id',
    {
      onRequest: canManage,
      preValidation: noParams,
      schema: {
        summary: 'An erasure and its outcome',
        tags,
        security,
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        response: { 200: Erasure, ...problems(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const erasure = isUuidText(request.params.id) ? await getErasure(ctx.db, tenant.id, request.params.id) : undefined;
      if (!erasure) throw notFound('not_found', 'erasure');
      return view(erasure);
    },
  );

  app.get(
    '/v1/actors/:actorId/export',
    {
      onRequest: canManage,
      preValidation: noParams,
      schema: {
        summary: "Export an actor's records",
        description:
          'NDJSON (application/x-ndjson), one record a line: `{"type": "event" | "session" | "exception" | "identity_link" | "environment", "record": {…}}`, the actor and the anonymous ids linked to it. Empty when the tenant holds nothing for it.',
        tags,
        security,
        params: ActorParams,
        response: { 200: { description: 'NDJSON', content: { 'application/x-ndjson': { schema: Type.String() } } }, ...problems(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const lines = async function* () {
        for await (const r of exportActor(ctx.db, tenant.id, request.params.actorId)) yield JSON.stringify(r) + '\n';
      };
      return reply
        .type('application/x-ndjson; charset=utf-8')
        .header('content-disposition', 'attachment; filename="actor-export.ndjson"')
        .send(Readable.from(lines()) as never);
    },
  );
}
