import * as ops from '../../admin/operations.js';
import type { BlockReason } from '../../domain/billing.js';
import type { App, AppContext } from '../context.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { onlyKnownParams } from '../plugins/query-params.js';
import { problems } from '../schemas/common.js';
import { TenantUsage } from '../schemas/admin.js';

// The tenant's own usage and billing state: what the operator sees at GET /admin/v1/tenants/{id}
// (the same code, admin/operations.ts), minus the operator's fields, plus the plan's policy so a
// client can say what happens at the allotment (docs/plans-and-limits.md).
export function usageRoutes(app: App, ctx: AppContext): void {
  const deps: ops.AdminDeps = { db: ctx.db, plans: ctx.plans, trialDays: ctx.config.trialDays, settings: ctx.config, now: ctx.now };
  app.get(
    '/v1/usage',
    {
      onRequest: requireKey(ctx.db, ['read']),
      preValidation: onlyKnownParams(),
      schema: {
        operationId: 'getUsage',
        summary: "This tenant's plan, billing state and events this billing cycle against the allotment",
        tags: ['usage'],
        security: [{ bearer: [] }],
        response: { 200: TenantUsage, ...problems(400, 401, 403) },
      },
    },
    async (request) => {
      const t = await ops.showTenant(deps, principalOf(request).tenant.id);
      const plan = ctx.plans[t.plan];
      return {
        plan: t.plan,
        policy: plan.monthly_events === null ? null : plan.policy,
        billing_state: t.billing_state,
        block_reason: t.block_reason as BlockReason | null,
        trial_ends_at: t.trial_ends_at,
        subscription_status: t.subscription_status,
        quota_grace_hours: ctx.config.quotaGraceHours,
        cancel_grace_hours: ctx.config.cancelGraceHours,
        usage: t.usage,
      };
    },
  );
}
