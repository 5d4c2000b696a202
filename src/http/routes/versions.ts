import { Type } from 'typebox';
import { AppError, notFound, validationError } from '../../errors.js';
import { isStorableString, isUuidText } from '../../domain/text.js';
import { pickLatest } from '../../domain/version-selector.js';
import { findProduct } from '../../storage/products.js';
import { encodeCursor } from '../../storage/rows.js';
import { allVersions, findVersion, insertRegisteredVersion, listVersions, updateVersion, type VersionRow } from '../../storage/versions.js';
import type { App, AppContext } from '../context.js';
import { cursorId, requireProduct } from '../lookups.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { IdParams, Pagination, page, problems } from '../schemas/common.js';
import { Version } from '../schemas/products.js';

const tags = ['versions'];
const security = [{ bearer: [] }];

const Registration = Type.Object({
  product: Type.String({ minLength: 1, maxLength: 256, description: 'product slug' }),
  product_version: Type.String({ minLength: 1, maxLength: 128 }),
  release_date: Type.Optional(Type.Union([Type.String({ format: 'date' }), Type.Null()])),
});
const Registered = Type.Object({
  id: Type.String({ format: 'uuid' }),
  product: Type.String(),
  product_version: Type.String(),
  release_date: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
});
const PatchVersion = Type.Object({
  release_date: Type.Optional(Type.Union([Type.String({ format: 'date' }), Type.Null()], { description: 'sets or changes; null or absent leaves it' })),
  status: Type.Optional(Type.Enum(['active', 'archived'])),
});
const VersionListQuery = Type.Object({
  ...Pagination.properties,
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('archived')], { description: 'only the versions in this state' })),
});
const VersionParams = Type.Object({ productId: Type.String({ maxLength: 256 }), versionId: Type.String({ maxLength: 64 }) });

const withSlug = (v: VersionRow, slug: string) => {
  const { product_id: _p, ...rest } = v;
  return { ...rest, product: slug };
};

export function versionRoutes(app: App, ctx: AppContext): void {
  const canRead = requireKey(ctx.db, ['read', 'manage_products']);
  const canManage = requireKey(ctx.db, ['manage_products']);

  app.post(
    '/v1/version-registrations',
    {
      onRequest: canManage,
      schema: {
        summary: 'Register a product version',
        description: 'Optional while strict version mode is off; needed before deploy when it is on.',
        tags,
        security,
        body: Registration,
        response: { 201: Registered, ...problems(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const { product: slug, product_version, release_date } = request.body;
      // The spec names a slug; a product id is accepted too, as everywhere else.
      if (!isStorableString(product_version)) throw validationError([{ field: 'product_version', message: 'contains a NUL character or a lone surrogate' }]);
      const product = isStorableString(slug) ? await findProduct(ctx.db, tenant.id, slug) : undefined;
      if (!product) throw notFound('product_not_found', 'product');
      if (product.status === 'deleting') throw new AppError(409, 'product_deleting', `product "${slug}" is being deleted`);
      const v = await insertRegisteredVersion(ctx.db, tenant.id, product.id, product_version, release_date ?? null);
      if (!v)
        throw new AppError(
          409,
          'version_already_registered',
          `version "${product_version}" of "${slug}" is already registered; use PATCH /v1/products/{productId}/versions/{versionId}`,
        );
      return reply
        .code(201)
        .send({ id: v.id, product: product.slug, product_version: v.product_version, release_date: v.release_date, created_at: v.created_at });
    },
  );

  app.get(
    '/v1/products/:id/versions',
    {
      onRequest: canRead,
      preValidation: onlyKnownParams(VersionListQuery),
      schema: {
        summary: 'List the versions of a product',
        tags,
        security,
        params: IdParams,
        querystring: VersionListQuery,
        response: { 200: page(Version), ...problems(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(ctx.db, tenant.id, request.params.id);
      const limit = request.query.limit ?? 50;
      const rows = await listVersions(ctx.db, tenant.id, product.id, limit + 1, cursorId(request.query.cursor), request.query.status);
      const data = rows.slice(0, limit).map((v) => withSlug(v, product.slug));
      return { data, next_cursor: rows.length > limit ? encodeCursor([data[data.length - 1]!.id]) : null };
    },
  );

  app.get(
    '/v1/products/:id/versions/latest',
    {
      onRequest: canRead,
      schema: {
        summary: 'The version the selector `latest` picks',
        description: 'Highest by semantic-version precedence where the strings parse, then release_date, then created_at.',
        tags,
        security,
        params: IdParams,
        response: { 200: Version, ...problems(401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(ctx.db, tenant.id, request.params.id);
      const latest = pickLatest(await allVersions(ctx.db, tenant.id, product.id));
      if (!latest) throw notFound('not_found', 'version');
      return withSlug(latest, product.slug);
    },
  );

  app.patch(
    '/v1/products/:productId/versions/:versionId',
    {
      onRequest: canManage,
      schema: {
        summary: 'Update a version: release_date, status (active | archived)',
        description: 'Archived versions are refused by strict version mode. There is no hard delete.',
        tags,
        security,
        params: VersionParams,
        body: PatchVersion,
        response: { 200: Version, ...problems(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(ctx.db, tenant.id, request.params.productId);
      const versionId = request.params.versionId;
      const found = isUuidText(versionId) ? await findVersion(ctx.db, tenant.id, product.id, versionId) : undefined;
      if (!found) throw notFound('not_found', 'version');
      const updated = await updateVersion(ctx.db, tenant.id, product.id, versionId, request.body);
      return withSlug(updated ?? found, product.slug);
    },
  );
}
