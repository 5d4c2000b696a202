import { AppError } from '../../errors.js';
import { insertProduct, listProducts, markProductDeleting, updateProduct } from '../../storage/products.js';
import { encodeCursor } from '../../storage/rows.js';
import { cursorId, requireProduct as requireProductOf } from '../lookups.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { IdParams, Pagination, page, problems } from '../schemas/common.js';
import { CreateProduct, PatchProduct, Product } from '../schemas/products.js';

const tags = ['products'];
const security = [{ bearer: [] }];

export function productRoutes(app: App, ctx: AppContext): void {
  const canRead = requireKey(ctx.db, ['read', 'manage_products']);
  const canManage = requireKey(ctx.db, ['manage_products']);

  const requireProduct = (tenantId: string, id: string) => requireProductOf(ctx.db, tenantId, id);

  app.post(
    '/v1/products',
    {
      onRequest: canManage,
      schema: { summary: 'Create a product', tags, security, body: CreateProduct, response: { 201: Product, ...problems(400, 401, 403, 409) } },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const product = await insertProduct(ctx.db, tenant.id, request.body.slug, request.body.name ?? request.body.slug);
      if (!product) throw new AppError(409, 'product_exists', `a product with slug "${request.body.slug}" already exists`);
      return reply.code(201).send(product);
    },
  );

  app.get(
    '/v1/products',
    {
      onRequest: canRead,
      preValidation: onlyKnownParams(Pagination),
      schema: { summary: 'List products', tags, security, querystring: Pagination, response: { 200: page(Product), ...problems(400, 401, 403) } },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const limit = request.query.limit ?? 50;
      const rows = await listProducts(ctx.db, tenant.id, limit + 1, cursorId(request.query.cursor));
      const data = rows.slice(0, limit);
      return { data, next_cursor: rows.length > limit ? encodeCursor([data[data.length - 1]!.id]) : null };
    },
  );

  app.get(
    '/v1/products/:id',
    {
      onRequest: canRead,
      schema: { summary: 'Get a product by id or slug', tags, security, params: IdParams, response: { 200: Product, ...problems(401, 403, 404) } },
    },
    async (request) => requireProduct(principalOf(request).tenant.id, request.params.id),
  );

  app.patch(
    '/v1/products/:id',
    {
      onRequest: canManage,
      schema: {
        summary: 'Update a product (strict version mode)',
        tags,
        security,
        params: IdParams,
        body: PatchProduct,
        response: { 200: Product, ...problems(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(tenant.id, request.params.id);
      return (await updateProduct(ctx.db, tenant.id, product.id, request.body)) ?? (await requireProduct(tenant.id, product.id));
    },
  );

  app.delete(
    '/v1/products/:id',
    {
      onRequest: canManage,
      schema: {
        summary: 'Delete a product',
        description: 'The product enters `deleting`: its events are refused as UNRECOGNIZED_PRODUCT and its data is purged in the background.',
        tags,
        security,
        params: IdParams,
        response: { 202: Product, ...problems(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(tenant.id, request.params.id);
      return reply.code(202).send((await markProductDeleting(ctx.db, tenant.id, product.id)) ?? product);
    },
  );
}
