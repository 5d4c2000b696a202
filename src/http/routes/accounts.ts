import { Type } from 'typebox';
import { notFound } from '../../errors.js';
import { traitsOf } from '../../storage/identity.js';
import { actorsOf, activeActors, counterpartsOf, dailyActivity, featuresOf, getSnapshot, listSnapshot, productsOf, rollupInfo, versionsOf, type Snapshot } from '../../storage/accounts.js';
import { coverage } from '../../storage/coverage.js';
import { encodeCursor } from '../../storage/rows.js';
import { cursorKey } from '../lookups.js';
import type { App, AppContext } from '../context.js';
import { requireAccountPlan } from '../plugins/account-gate.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { problems } from '../schemas/common.js';
import * as S from '../schemas/accounts.js';
import { listExceptionGroups } from './exceptions.js';

const tags = ['accounts and licenses'];
const security = [{ bearer: [] }];
const Page = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })), cursor: Type.Optional(Type.String({ maxLength: 1024 })) });
const Top = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 20 })) });
const AccountParams = Type.Object({ accountId: Type.String({ minLength: 1, maxLength: 256 }) });
const LicenseParams = Type.Object({ licenseId: Type.String({ minLength: 1, maxLength: 256 }) });
const errors = problems(400, 401, 402, 403, 404);

const textCursor = (cursor: string | undefined): string | undefined => cursorKey(cursor, ['text'] as const)?.[0];

function paged<T>(rows: T[], limit: number, key: (row: T) => string) {
  const data = rows.slice(0, limit);
  return { data, next_cursor: rows.length > limit ? encodeCursor([key(data[data.length - 1]!)]) : null };
}

function countsOf<K extends 'accounts' | 'licenses'>(s: Snapshot, other: K) {
  const base = { events: s.events, sessions: s.sessions, exceptions: s.exceptions, active_actors: s.active_actors, products: s.products };
  return { ...base, [other]: s[other] } as typeof base & Record<K, number>;
}

const accountRow = ({ id, accounts: _a, ...r }: Snapshot) => ({ account_id: id, ...r });
const licenseRow = ({ id, licenses: _l, ...r }: Snapshot) => ({ license_id: id, ...r });

export function accountRoutes(app: App, ctx: AppContext): void {
  const gate = [requireKey(ctx.db, ['view_accounts']), requireAccountPlan];
  const info = async (tenantId: string) => {
    const r = await rollupInfo(ctx.db, tenantId);
    return { refreshed_at: r?.refreshed_at ?? null, window_days: 30 as const, window_start: r?.window_start ?? null, windowStart: r?.window_start ?? '9999-12-31' };
  };
  const rollup = ({ windowStart: _w, ...r }: Awaited<ReturnType<typeof info>>) => r;

  /** A known account or license (seen in the window at the last refresh); otherwise 404, for another tenant's too. */
  const scoped = async (tenantId: string, kind: 'account_id' | 'license_id', id: string) => {
    const i = await info(tenantId);
    const snapshot = await getSnapshot(ctx.db, tenantId, kind, id);
    if (!snapshot) throw notFound(kind === 'account_id' ? 'account_not_found' : 'license_not_found', kind === 'account_id' ? 'account' : 'license');
    return { i, snapshot, scope: { tenantId, kind, id, windowStart: i.windowStart } };
  };

  app.get('/v1/accounts', { onRequest: gate, schema: { summary: 'Observed accounts', tags, security, querystring: Page, response: { 200: S.rollupPage(S.AccountRow), ...errors } } }, async (request) => {
    const { tenant } = principalOf(request);
    const limit = request.query.limit ?? 50;
    const rows = await listSnapshot(ctx.db, tenant.id, 'account_id', textCursor(request.query.cursor), limit + 1);
    return { ...paged(rows.map(accountRow), limit, (r) => r.account_id), ...rollup(await info(tenant.id)) };
  });

  app.get('/v1/accounts/coverage', { onRequest: gate, schema: { summary: 'Account and license coverage, missing context, cardinality warnings', tags, security, response: { 200: S.Coverage, ...errors } } }, async (request) => {
    const { tenant } = principalOf(request);
    const i = await info(tenant.id);
    return { ...rollup(i), ...(await coverage(ctx.db, tenant.id, i.windowStart)) };
  });

  app.get('/v1/accounts/:accountId', { onRequest: gate, schema: { summary: 'One account overview', tags, security, params: AccountParams, response: { 200: S.AccountOverview, ...errors } } }, async (request) => {
    const { tenant } = principalOf(request);
    const { i, snapshot, scope } = await scoped(tenant.id, 'account_id', request.params.accountId);
    return {
      account_id: request.params.accountId,
      ...rollup(i),
      counts: countsOf(snapshot, 'licenses'),
      first_seen: snapshot.first_seen,
      last_seen: snapshot.last_seen,
      products: await productsOf(ctx.db, scope),
      versions: await versionsOf(ctx.db, scope),
      licenses: (await counterpartsOf(ctx.db, scope)).map(({ id, ...r }) => ({ license_id: id, ...r })),
      recent_exceptions: (await listExceptionGroups(ctx, tenant.id, { account_id: request.params.accountId, since: `${i.windowStart}T00:00:00Z`, limit: 5 })).data,
    };
  });

  app.get(
    '/v1/accounts/:accountId/features',
    { onRequest: gate, schema: { summary: 'Top (category, name) event pairs of the account', tags, security, params: AccountParams, querystring: Top, response: { 200: S.rollupList(S.Feature), ...errors } } },
    async (request) => {
      const { tenant } = principalOf(request);
      const { i, scope } = await scoped(tenant.id, 'account_id', request.params.accountId);
      return { data: await featuresOf(ctx.db, scope, request.query.limit ?? 20), ...rollup(i) };
    },
  );

  app.get(
    '/v1/accounts/:accountId/actors',
    { onRequest: gate, schema: { summary: 'Actors observed under the account', tags, security, params: AccountParams, querystring: Page, response: { 200: S.rollupPage(S.Actor), ...errors } } },
    async (request) => {
      const { tenant } = principalOf(request);
      const { i, scope } = await scoped(tenant.id, 'account_id', request.params.accountId);
      const limit = request.query.limit ?? 50;
      const page = paged(await actorsOf(ctx.db, scope, textCursor(request.query.cursor), limit + 1), limit, (r) => r.actor_id);
      const traits = await traitsOf(ctx.db, tenant.id, page.data.map((r) => r.actor_id));
      return { ...page, data: page.data.map((r) => ({ ...r, traits: traits.get(r.actor_id) ?? null })), ...rollup(i) };
    },
  );

  app.get(
    '/v1/accounts/:accountId/licenses',
    { onRequest: gate, schema: { summary: 'Licenses observed under the account', tags, security, params: AccountParams, response: { 200: S.rollupList(S.LicenseUsage), ...errors } } },
    async (request) => {
      const { tenant } = principalOf(request);
      const { i, scope } = await scoped(tenant.id, 'account_id', request.params.accountId);
      return { data: (await counterpartsOf(ctx.db, scope)).map(({ id, ...r }) => ({ license_id: id, ...r })), ...rollup(i) };
    },
  );

  app.get(
    '/v1/accounts/:accountId/versions',
    { onRequest: gate, schema: { summary: '(source_app, source_version) rows with usage counts', tags, security, params: AccountParams, response: { 200: S.rollupList(S.VersionUsage), ...errors } } },
    async (request) => {
      const { tenant } = principalOf(request);
      const { i, scope } = await scoped(tenant.id, 'account_id', request.params.accountId);
      return { data: await versionsOf(ctx.db, scope), ...rollup(i) };
    },
  );

  app.get(
    '/v1/accounts/:accountId/exceptions',
    {
      onRequest: gate,
      schema: { summary: 'Exception groups of the account (the shape of GET /v1/exceptions)', tags, security, params: AccountParams, querystring: S.ExceptionQuery, response: { 200: S.ExceptionGroups, ...errors } },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      await scoped(tenant.id, 'account_id', request.params.accountId);
      return listExceptionGroups(ctx, tenant.id, { ...request.query, account_id: request.params.accountId });
    },
  );

  app.get('/v1/licenses', { onRequest: gate, schema: { summary: 'Observed licenses', tags, security, querystring: Page, response: { 200: S.rollupPage(S.LicenseRow), ...errors } } }, async (request) => {
    const { tenant } = principalOf(request);
    const limit = request.query.limit ?? 50;
    const rows = await listSnapshot(ctx.db, tenant.id, 'license_id', textCursor(request.query.cursor), limit + 1);
    return { ...paged(rows.map(licenseRow), limit, (r) => r.license_id), ...rollup(await info(tenant.id)) };
  });

  app.get('/v1/licenses/:licenseId', { onRequest: gate, schema: { summary: 'One license detail', tags, security, params: LicenseParams, response: { 200: S.LicenseDetail, ...errors } } }, async (request) => {
    const { tenant } = principalOf(request);
    const { i, snapshot, scope } = await scoped(tenant.id, 'license_id', request.params.licenseId);
    return {
      license_id: request.params.licenseId,
      ...rollup(i),
      counts: countsOf(snapshot, 'accounts'),
      first_seen: snapshot.first_seen,
      last_seen: snapshot.last_seen,
      accounts: (await counterpartsOf(ctx.db, scope)).map(({ id, ...r }) => ({ account_id: id, ...r })),
      products: await productsOf(ctx.db, scope),
      versions: await versionsOf(ctx.db, scope),
      active_actors: await activeActors(ctx.db, scope),
      recent_activity: await dailyActivity(ctx.db, scope),
    };
  });
}
