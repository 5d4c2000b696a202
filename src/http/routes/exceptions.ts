import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { validationError } from '../../errors.js';
import { pickLatest } from '../../domain/version-selector.js';
import { exceptionGroups } from '../../storage/exception-groups.js';
import { findProduct } from '../../storage/products.js';
import { encodeCursor } from '../../storage/rows.js';
import { cursorKey } from '../lookups.js';
import { allVersions } from '../../storage/versions.js';
import type { App, AppContext } from '../context.js';
import { requireAccountPlan } from '../plugins/account-gate.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { problems } from '../schemas/common.js';
import { ExceptionGroups, ExceptionQuery } from '../schemas/accounts.js';

type Query = Static<typeof ExceptionQuery>;

/** Exception groups by fingerprint with the filters of GET /v1/exceptions; shared by the account route. */
export async function listExceptionGroups(ctx: AppContext, tenantId: string, query: Query) {
  let productId: string | undefined;
  let version = query.version;
  if (query.product !== undefined) {
    const product = await findProduct(ctx.db, tenantId, query.product);
    if (!product) return { data: [], next_cursor: null };
    productId = product.id;
  }
  if (version === 'latest') {
    if (!productId) throw validationError([{ field: 'version', message: 'latest needs a product filter' }]);
    const latest = pickLatest(await allVersions(ctx.db, tenantId, productId));
    if (!latest) return { data: [], next_cursor: null };
    version = latest.product_version;
  }
  const key = cursorKey(query.cursor, ['timestamp', 'text'] as const);
  const before = key && { lastSeen: key[0], fingerprint: key[1] };
  const limit = query.limit ?? 50;
  const rows = await exceptionGroups(ctx.db, tenantId, {
    productId,
    version,
    severity: query.severity,
    since: query.since,
    until: query.until,
    accountId: query.account_id,
    licenseId: query.license_id,
    before,
    limit: limit + 1,
  });
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return { data, next_cursor: rows.length > limit && last ? encodeCursor([last.last_seen, last.fingerprint]) : null };
}

export function exceptionRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/exceptions',
    {
      onRequest: [
        requireKey(ctx.db, ['read', 'manage_products', 'view_accounts']),
        // account_id / license_id filters follow the account views' plan gating.
        async (request: FastifyRequest, reply: FastifyReply) => {
          const q = request.query as Query;
          if (q.account_id !== undefined || q.license_id !== undefined) await requireAccountPlan.call(app, request, reply);
        },
      ],
      schema: {
        summary: 'Exception groups by fingerprint',
        description: 'Count, affected actors, first and last seen, versions and the latest occurrence of each group; newest first.',
        tags: ['exceptions'],
        security: [{ bearer: [] }],
        querystring: ExceptionQuery,
        response: { 200: ExceptionGroups, ...problems(400, 401, 402, 403) },
      },
    },
    async (request) => listExceptionGroups(ctx, principalOf(request).tenant.id, request.query),
  );
}
