import { Type } from 'typebox';
import * as Q from '../../query/accounts.js';
import type { App, AppContext } from '../context.js';
import { requireAccountPlan } from '../plugins/account-gate.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { problems } from '../schemas/common.js';
import * as S from '../schemas/accounts.js';

// Thin handlers: each calls one query function of src/query/accounts.ts.
const tags = ['accounts and licenses'];
const security = [{ bearer: [] }];
const Page = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
});
const AccountParams = Type.Object({ accountId: Type.String({ minLength: 1, maxLength: 256 }) });
const LicenseParams = Type.Object({ licenseId: Type.String({ minLength: 1, maxLength: 256 }) });
const errors = problems(400, 401, 402, 403, 404);

export function accountRoutes(app: App, ctx: AppContext): void {
  const gate = [requireKey(ctx.db, ['view_accounts']), requireAccountPlan];
  const on = (querystring?: typeof Page | typeof S.AccountExceptionQuery) => ({ onRequest: gate, preValidation: onlyKnownParams(querystring) });
  const tenantOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request).tenant.id;

  app.get(
    '/v1/accounts',
    { ...on(Page), schema: { summary: 'Observed accounts', tags, security, querystring: Page, response: { 200: S.rollupPage(S.AccountRow), ...errors } } },
    async (request) => Q.listAccounts(ctx.db, tenantOf(request), request.query),
  );

  app.get(
    '/v1/accounts/coverage',
    {
      ...on(),
      schema: { summary: 'Account and license coverage, missing context, cardinality warnings', tags, security, response: { 200: S.Coverage, ...errors } },
    },
    async (request) => Q.accountCoverage(ctx.db, tenantOf(request)),
  );

  app.get(
    '/v1/accounts/:accountId',
    { ...on(), schema: { summary: 'One account overview', tags, security, params: AccountParams, response: { 200: S.AccountOverview, ...errors } } },
    async (request) => Q.accountOverview(ctx.db, tenantOf(request), request.params.accountId),
  );

  // The account's paged lists: one shape, each its own query function.
  const lists = [
    ['features', 'Top (category, name) event pairs of the account, most events first, paged', S.Feature, Q.accountFeatures],
    ['actors', 'Actors observed under the account', S.Actor, Q.accountActors],
    ['licenses', 'Licenses observed under the account', S.LicenseUsage, Q.accountLicenses],
    ['versions', '(source_app, source_version) rows with usage counts', S.VersionUsage, Q.accountVersions],
  ] as const;
  for (const [list, summary, item, read] of lists) {
    app.get(
      `/v1/accounts/:accountId/${list}`,
      {
        ...on(Page),
        schema: { summary, tags, security, params: AccountParams, querystring: Page, response: { 200: S.rollupPage(item), ...errors } },
      },
      async (request) => read(ctx.db, tenantOf(request), request.params.accountId, request.query),
    );
  }

  app.get(
    '/v1/accounts/:accountId/exceptions',
    {
      ...on(S.AccountExceptionQuery),
      schema: {
        summary: 'Exception groups of the account (the shape of GET /v1/exceptions)',
        tags,
        security,
        params: AccountParams,
        querystring: S.AccountExceptionQuery,
        response: { 200: S.ExceptionGroups, ...errors },
      },
    },
    async (request) => Q.accountExceptions(ctx.db, tenantOf(request), request.params.accountId, request.query, ctx.now()),
  );

  app.get(
    '/v1/licenses',
    { ...on(Page), schema: { summary: 'Observed licenses', tags, security, querystring: Page, response: { 200: S.rollupPage(S.LicenseRow), ...errors } } },
    async (request) => Q.listLicenses(ctx.db, tenantOf(request), request.query),
  );

  app.get(
    '/v1/licenses/:licenseId',
    { ...on(), schema: { summary: 'One license detail', tags, security, params: LicenseParams, response: { 200: S.LicenseDetail, ...errors } } },
    async (request) => Q.licenseDetail(ctx.db, tenantOf(request), request.params.licenseId),
  );
}
