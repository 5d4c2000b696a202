import { Readable } from 'node:stream';
import { EventListQuery, exportEvents, listEvents, type ExplorerEvent } from '../../query/reports/events.js';
import { head, resolveFilters, withinBudget } from '../../query/filters.js';
import type { App, AppContext } from '../context.js';
import { csvLine, echoHeaders, wants } from '../csv.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { problems } from '../schemas/common.js';
import * as S from '../schemas/reports.js';

// GET /v1/events: the explorer (JSON pages) and its export (Accept: application/x-ndjson or
// text/csv: every matching event, streamed page by page; memory stays bounded by one page).
const COLUMNS = [
  'event_id',
  'occurred_at',
  'received_at',
  'product',
  'product_version',
  'category',
  'name',
  'actor_id',
  'identified_actor_id',
  'session_id',
  'account_id',
  'license_id',
  'properties',
];

export function explorerRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/events',
    {
      onRequest: requireKey(ctx.db, ['read']),
      preValidation: onlyKnownParams(EventListQuery),
      schema: {
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
      if (!csv && !wants(request, 'application/x-ndjson')) return withinBudget(listEvents(ctx.db, principal, request.query, ctx.now()));
      // Parameters are checked before the first byte goes out: a bad one is still a problem+json.
      const f = await resolveFilters(ctx.db, principal, request.query, ctx.now());
      echoHeaders(reply, await head(ctx.db, f.scope), 'events', csv ? 'csv' : 'ndjson');
      const pages = exportEvents(ctx.db, principal, request.query, ctx.now());
      // One page (a string) buffered ahead of the socket at most: Readable.from would read 16 ahead.
      async function* lines() {
        if (csv) yield csvLine(COLUMNS);
        for await (const rows of pages) {
          // Every column but properties (one JSON cell) is a scalar: read it straight off the row.
          yield rows
            .map((r: ExplorerEvent) => (csv ? csvLine(COLUMNS.map((c) => (r as unknown as Record<string, unknown>)[c])) : JSON.stringify(r) + '\n'))
            .join('');
        }
      }
      return reply.type(csv ? 'text/csv; charset=utf-8' : 'application/x-ndjson').send(Readable.from(lines(), { highWaterMark: 1 }) as never);
    },
  );
}
