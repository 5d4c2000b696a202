import { Type } from 'typebox';
import { listDeadLetters } from '../../storage/invalid-events.js';
import { encodeCursor } from '../../storage/rows.js';
import { cursorId } from '../lookups.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { DateTime, page, problems } from '../schemas/common.js';

const InvalidEvent = Type.Object({
  id: Type.String({ format: 'uuid' }),
  kind: Type.String({ description: 'event | session | session_end | exception | identify' }),
  reason: Type.String(),
  message: Type.String(),
  product: Type.Union([Type.String(), Type.Null()], { description: 'as sent' }),
  payload: Type.Unknown({ description: 'the raw element (truncated to 8 KB: then the kept text)' }),
  api_key_id: Type.Union([Type.String(), Type.Null()]),
  received_at: DateTime,
});

const Query = Type.Object({
  product: Type.Optional(Type.String({ maxLength: 256 })),
  reason: Type.Optional(Type.String({ maxLength: 64 })),
  kind: Type.Optional(Type.Enum(['event', 'session', 'session_end', 'exception', 'identify'])),
  since: Type.Optional(Type.String({ format: 'date-time' })),
  until: Type.Optional(Type.String({ format: 'date-time' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

export function invalidEventRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/invalid-events',
    {
      onRequest: requireKey(ctx.db, ['read', 'manage_products']),
      preValidation: onlyKnownParams(Query),
      schema: {
        summary: 'List rejected records (dead letters), newest first',
        tags: ['invalid events'],
        security: [{ bearer: [] }],
        querystring: Query,
        response: { 200: page(InvalidEvent), ...problems(400, 401, 403) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const q = request.query;
      const beforeId = cursorId(q.cursor);
      const limit = q.limit ?? 50;
      const rows = await listDeadLetters(ctx.db, tenant.id, { ...q, beforeId, limit: limit + 1 });
      const data = rows.slice(0, limit);
      return { data, next_cursor: rows.length > limit ? encodeCursor([data[data.length - 1]!.id]) : null };
    },
  );
}
