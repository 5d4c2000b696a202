import { billingPeriod } from '../domain/billing-period.js';
import { billingState, type BillingSettings, type BillingState } from '../domain/billing.js';
import type { Plans } from '../domain/plans.js';
import type { Queryable } from './db.js';
import type { TenantRow } from './tenants.js';
import { getUsage } from './usage.js';

export interface TenantBilling {
  state: BillingState;
  period: { start: Date; end: Date };
  used: number | undefined;
}

/**
 * The tenant's billing state now. On the ingestion path (`countUsage` false) the usage is read only
 * when this cycle has an exhaustion stamp, the one case where it can decide (an upgrade may have
 * lifted the cap): for every other request the answer comes from the tenant row that
 * authentication already read, so a 402 costs no extra query.
 */
export async function tenantBilling(
  q: Queryable,
  plans: Plans,
  settings: BillingSettings,
  t: TenantRow,
  now: Date,
  countUsage: boolean,
): Promise<TenantBilling> {
  const period = billingPeriod(new Date(t.cycle_anchor), now);
  const stamp =
    t.quota_exhausted_at && t.quota_period_start && Date.parse(t.quota_period_start) === period.start.getTime() ? new Date(t.quota_exhausted_at) : null;
  const used = countUsage || stamp ? await getUsage(q, t.id, period.start) : undefined;
  const state = billingState(
    {
      plan: t.plan,
      planConfig: plans[t.plan],
      createdAt: new Date(t.created_at),
      trialEndsAt: t.trial_ends_at ? new Date(t.trial_ends_at) : null,
      subscriptionStatus: t.subscription_status,
      cancelledAt: t.cancelled_at ? new Date(t.cancelled_at) : null,
      cycleAnchor: new Date(t.cycle_anchor),
      usedThisCycle: used ?? 0,
      quotaExhaustedAt: stamp,
    },
    settings,
    now,
  );
  return { state, period, used };
}
