import { timingSafeEqual, createHash } from 'node:crypto';
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { AppError, unauthorized } from '../../errors.js';
import * as ops from '../../admin/operations.js';
import type { App, AppContext } from '../context.js';
import { bearerToken } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { page, Pagination, problems } from '../schemas/common.js';
import { CreateKey, CreateTenant, IssuedKey, PatchTenant, Tenant } from '../schemas/admin.js';

const tags = ['operator'];
const security = [{ admin: [] }];
const TenantParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const KeyParams = Type.Object({ id: Type.String({ maxLength: 64 }), keyId: Type.String({ maxLength: 64 }) });

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The operator API, enabled by ADMIN_TOKEN. Not a tenant's: one token for the whole service. */
export function adminRoutes(app: App, ctx: AppContext): void {
  const adminToken = ctx.config.adminToken;
  if (!adminToken) return;
  const expected = digest(adminToken);
  const requireAdmin = async (request: FastifyRequest) => {
    const token = bearerToken(request);
    if (!token || !timingSafeEqual(digest(token), expected)) throw unauthorized('missing or invalid ADMIN_TOKEN');
  };
  const deps: ops.AdminDeps = { db: ctx.db, plans: ctx.plans, trialDays: ctx.config.trialDays, settings: ctx.config, now: ctx.now };

  app.post(
    '/admin/v1/tenants',
    {
      onRequest: requireAdmin,
      schema: {
        summary: 'Create a tenant with its first keys',
        tags,
        security,
        body: CreateTenant,
        response: { 201: Type.Object({ tenant: Tenant, api_keys: Type.Array(IssuedKey) }), ...problems(400, 401) },
      },
    },
    async (request, reply) => reply.code(201).send(await ops.createTenant(deps, request.body)),
  );
  app.get(
    '/admin/v1/tenants',
    {
      onRequest: requireAdmin,
      preValidation: onlyKnownParams(Pagination),
      schema: { summary: 'Every tenant, oldest first', tags, security, querystring: Pagination, response: { 200: page(Tenant), ...problems(400, 401) } },
    },
    async (request) => ops.listTenants(deps, request.query),
  );
  app.get(
    '/admin/v1/tenants/:id',
    {
      onRequest: requireAdmin,
      schema: { summary: 'A tenant with its billing state and usage', tags, security, params: TenantParams, response: { 200: Tenant, ...problems(401, 404) } },
    },
    async (request) => ops.showTenant(deps, request.params.id),
  );
  app.patch(
    '/admin/v1/tenants/:id',
    {
      onRequest: requireAdmin,
      schema: {
        summary: 'Change plan or settings',
        tags,
        security,
        params: TenantParams,
        body: PatchTenant,
        response: { 200: Tenant, ...problems(400, 401, 404) },
      },
    },
    async (request) => ops.patchTenant(deps, request.params.id, request.body),
  );
  app.post(
    '/admin/v1/tenants/:id/subscription/cancel',
    {
      onRequest: requireAdmin,
      schema: { summary: 'Cancel the subscription', tags, security, params: TenantParams, response: { 200: Tenant, ...problems(401, 404) } },
    },
    async (request) => ops.cancelSubscription(deps, request.params.id),
  );
  app.post(
    '/admin/v1/tenants/:id/subscription/reactivate',
    {
      onRequest: requireAdmin,
      schema: { summary: 'Reactivate a cancelled subscription', tags, security, params: TenantParams, response: { 200: Tenant, ...problems(401, 404) } },
    },
    async (request) => ops.reactivateSubscription(deps, request.params.id),
  );
  app.post(
    '/admin/v1/tenants/:id/keys',
    {
      onRequest: requireAdmin,
      schema: {
        summary: 'Issue an API key (shown once)',
        tags,
        security,
        params: TenantParams,
        body: CreateKey,
        response: { 201: IssuedKey, ...problems(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await ops.issueKey(deps, request.params.id, request.body)),
  );
  app.get(
    '/admin/v1/backup',
    {
      onRequest: requireAdmin,
      schema: {
        summary: 'A backup of the embedded store (gzipped tar of its data directory)',
        description: 'Consistent while the server serves. With DATABASE_URL: 409 not_supported; back up PostgreSQL with pg_dump (docs/deploy.md).',
        tags,
        security,
        response: {
          200: { description: 'application/gzip', content: { 'application/gzip': { schema: Type.String({ format: 'binary' }) } } },
          ...problems(401, 409),
        },
      },
    },
    async (_request, reply) => {
      if (!ctx.db.dumpDataDir) throw new AppError(409, 'not_supported', 'this server uses PostgreSQL (DATABASE_URL): back it up with pg_dump');
      const tarball = await ctx.db.dumpDataDir();
      return reply.type('application/gzip').send(Buffer.from(tarball.buffer, tarball.byteOffset, tarball.byteLength) as never);
    },
  );
  app.delete(
    '/admin/v1/tenants/:id/keys/:keyId',
    { onRequest: requireAdmin, schema: { summary: 'Revoke an API key', tags, security, params: KeyParams, response: { ...problems(401, 404) } } },
    async (request, reply) => {
      await ops.revokeKey(deps, request.params.id, request.params.keyId);
      return reply.code(204).send(null as never);
    },
  );
}
