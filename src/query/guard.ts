import { AppError, forbidden } from '../errors.js';
import { ACCOUNT_PLANS } from '../domain/plans.js';

// The one guard for plan features on the query side. Account and license answers (views,
// filters, breakdowns, counting by account) follow SPEC.md's rule, in this order: the plan (402
// plan_limit_reached unless Business, Enterprise or Trial), then the tenant's account context
// setting (403 account_context_disabled). The key's permission (401, 403 forbidden) comes first,
// in the route's onRequest.

export interface TenantPlan {
  plan: string;
  account_context_enabled: boolean;
}

/** Who asks: the key's permissions and its tenant. */
export interface Reader {
  permissions: readonly string[];
  tenant: TenantPlan & { id: string };
}

export type Feature = 'account_context';

/** Why the tenant's plan or setting refuses account answers, or undefined when they allow them. */
function accountContextRefusal(tenant: TenantPlan): 'plan' | 'setting' | undefined {
  if (!(ACCOUNT_PLANS as readonly string[]).includes(tenant.plan)) return 'plan';
  if (!tenant.account_context_enabled) return 'setting';
  return undefined;
}

export function requireFeature(tenant: TenantPlan, feature: Feature): void {
  if (feature !== 'account_context') return;
  const refusal = accountContextRefusal(tenant);
  if (refusal === 'plan') {
    throw new AppError(
      402,
      'plan_limit_reached',
      `account and license views need the Business or Enterprise plan (or a trial); this tenant is on ${tenant.plan}`,
    );
  }
  if (refusal === 'setting') {
    throw new AppError(403, 'account_context_disabled', 'account context is disabled for this tenant (operator setting account_context_enabled)');
  }
}

/** Per-account and per-license answers: view_accounts (403 forbidden), then the plan and the tenant's setting. */
export function requireAccountAnswers(who: Reader): void {
  if (!who.permissions.includes('view_accounts')) throw forbidden('view_accounts');
  requireFeature(who.tenant, 'account_context');
}

/**
 * Whether answers may carry account and license ids (rows that name them, not counts): the key
 * may view accounts, and the tenant's plan and setting allow them.
 */
export const seesAccounts = (p: Reader) => p.permissions.includes('view_accounts') && accountContextRefusal(p.tenant) === undefined;
