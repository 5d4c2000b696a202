import { EventListQuery, exportEvents, listEvents } from '../../query/reports/events.js';
import type { App, AppContext } from '../context.js';
import { echoHeaders, wants } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { EXPORTS_CSV_NDJSON, problems } from '../schemas/common.js';
import * as S from '../schemas/reports.js';

// GET /v1/events: the explorer (JSON pages) and its export (Accept: application/x-ndjson or
// text/csv: every matching event, streamed, each line written by the store).

export function explorerRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/events',
    {
      onRequest: requireKey(ctx.db, ['read']),
      preValidation: onlyKnownParams(EventListQuery),
      schema: {
        ...EXPORTS_CSV_NDJSON,
        operationId: 'listEvents',
        summary: 'Event explorer: raw events newest first; Accept application/x-ndjson or text/csv exports every match, streamed',
        description:
          'The export ignores limit and starts after cursor when one is given. account_id and license_id appear only for keys that may see accounts.',
        tags: ['events'],
        security: [{ bearer: [] }],
        querystring: EventListQuery,
        response: { 200: S.ExplorerPage, ...problems(400, 401, 402, 403, 422) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const csv = wants(request, 'text/csv');
      if (!csv && !wants(request, 'application/x-ndjson')) return listEvents(ctx.db, principal, request.query, ctx.now());
      // Parameters are checked before the first byte goes out: a bad one is still a problem+json.
      const { head, body } = await exportEvents(ctx.db, principal, request.query, ctx.now(), csv ? 'csv' : 'ndjson', ctx.config.exportPageRows);
      echoHeaders(reply, head, 'events', csv ? 'csv' : 'ndjson');
      // The body honours backpressure; a client that goes away destroys it, which ends its statement.
      return reply.type(csv ? 'text/csv; charset=utf-8' : 'application/x-ndjson').send(body as never);
    },
  );
}
