// The tenant's ingestion state (SPEC "Tenant ingestion state (billing)"), as a pure function of the
// tenant's billing facts and the clock. Nothing is stored here: "blocked" is never a flag that has
// to be cleared, it is recomputed on every call, so an upgrade, a reactivation or a new billing
// cycle takes effect at once, without a job having to run first.
import { billingPeriod } from './billing-period.js';
// Type-only: plans.ts also holds the file loader, which this module must not pull in at run time.
import type { Plan, PlanName } from './plans.js';

export interface BillingInput {
  plan: PlanName;
  /** plans[plan] as configured (PLANS_FILE may change a plan's policy, so the policy is read here, never from the name). */
  planConfig: Plan;
  createdAt: Date;
  /** Set for trial tenants at creation (createdAt + TRIAL_DAYS). null = no end, e.g. an operator-extended trial. */
  trialEndsAt: Date | null;
  subscriptionStatus: 'active' | 'cancelled';
  cancelledAt: Date | null;
  /** Cycles run monthly from here (billingPeriod). */
  cycleAnchor: Date;
  /** Accepted events in the cycle that contains `now` (not duplicates, not rejections). */
  usedThisCycle: number;
  /** When usage first reached the allotment; a stamp from an earlier cycle is ignored. */
  quotaExhaustedAt: Date | null;
}

/** Config's own field names, so `config` can be passed as it is. */
export interface BillingSettings {
  quotaGraceHours: number;
  cancelGraceHours: number;
}

export type BlockReason = 'quota_exhausted' | 'trial_expired' | 'subscription_cancelled';

export type BillingState =
  /** overage > 0 only on charge plans: a cap plan's events in its grace period are not billable. */
  | { state: 'accepting'; overage: number }
  /** retryAt: when the block lifts by itself (the next cycle); null when only an operator action lifts it. */
  | { state: 'blocked'; reason: BlockReason; retryAt: Date | null };

const HOUR_MS = 3_600_000;

/** Events past the allotment that are billed: charge plans only (SPEC: cap-plan overage is not billable). */
export function billableOverage(planConfig: Plan, used: number): number {
  if (planConfig.monthly_events === null) return 0;
  return planConfig.policy === 'charge' ? Math.max(0, used - planConfig.monthly_events) : 0;
}

/**
 * Precedence when several blocks apply: subscription_cancelled, then trial_expired, then
 * quota_exhausted. The blocks that never lift by themselves come first: reporting
 * quota_exhausted with a retryAt while the tenant is also cancelled would send clients to retry
 * at the next cycle only to be refused again. Cancellation precedes trial expiry because it is
 * the customer's own, more recent decision, and its remedy (reactivation) is the one to name.
 *
 * Every deadline is inclusive: at exactly the deadline the tenant is blocked, one ms before it
 * is not.
 */
export function billingState(input: BillingInput, settings: BillingSettings, now: Date): BillingState {
  const t = now.getTime();

  // The self-hosting plan (CONTRACT.md): never blocked, whatever the subscription says.
  if (input.plan === 'unlimited') return { state: 'accepting', overage: 0 };

  if (input.subscriptionStatus === 'cancelled') {
    // A cancellation without its time cannot be given a grace period that we can place on the
    // clock; the row is inconsistent, and a cancelled subscription is not paying, so block.
    const graceEnd = input.cancelledAt === null ? -Infinity : input.cancelledAt.getTime() + settings.cancelGraceHours * HOUR_MS;
    if (t >= graceEnd) return { state: 'blocked', reason: 'subscription_cancelled', retryAt: null };
  }

  // Converting to any other plan (paid) ends the trial rule; only the trial plan expires.
  if (input.plan === 'trial' && input.trialEndsAt !== null && t >= input.trialEndsAt.getTime()) {
    return { state: 'blocked', reason: 'trial_expired', retryAt: null };
  }

  const allotment = input.planConfig.monthly_events;
  if (input.planConfig.policy === 'cap' && allotment !== null && input.usedThisCycle >= allotment) {
    const period = billingPeriod(input.cycleAnchor, now);
    // A stamp from an earlier cycle belongs to a cycle that has ended: the new cycle starts
    // fresh. With no stamp for this cycle (not recorded yet, or the caller passed a stale
    // usage), the grace is counted from now, i.e. never block without proof it has elapsed.
    const stamp = input.quotaExhaustedAt;
    const exhaustedAt = stamp !== null && stamp.getTime() >= period.start.getTime() ? stamp.getTime() : t;
    if (t >= exhaustedAt + settings.quotaGraceHours * HOUR_MS) {
      // Lifts by itself when the next cycle begins (usage then restarts at 0), or at once on an
      // upgrade: a charge plan skips this branch, a larger cap plan fails the usage test above.
      return { state: 'blocked', reason: 'quota_exhausted', retryAt: period.end };
    }
  }

  return { state: 'accepting', overage: billableOverage(input.planConfig, input.usedThisCycle) };
}

/**
 * Whole seconds until a block lifts by itself, for Retry-After on the 402; at least 1 so a
 * client never retries in a tight loop at the boundary. undefined when there is nothing to wait
 * for (accepting, or a block only an operator lifts).
 */
export function retryAfterSeconds(state: BillingState, now: Date): number | undefined {
  if (state.state !== 'blocked' || state.retryAt === null) return undefined;
  return Math.max(1, Math.ceil((state.retryAt.getTime() - now.getTime()) / 1000));
}
