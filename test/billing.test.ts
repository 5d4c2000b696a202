// billingState is a pure function run for real; the clock is faked by passing `now` (fixed UTC instants), no store, no timers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { billingState, billableOverage, retryAfterSeconds, type BillingInput, type BillingSettings } from '../src/domain/billing.js';
import { DEFAULT_PLANS, type LimitedPlanName, type PlanName } from '../src/domain/plans.js';

const settings: BillingSettings = { quotaGraceHours: 72, cancelGraceHours: 168 };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (iso: string) => new Date(iso);
const plus = (d: Date, ms: number) => new Date(d.getTime() + ms);

// A tenant created (and anchored) on 2025-03-10 10:00 UTC; its first cycle ends 2025-04-10 10:00.
const CREATED = at('2025-03-10T10:00:00.000Z');

function tenant(plan: PlanName, over: Partial<BillingInput> = {}): BillingInput {
  return {
    plan,
    planConfig: DEFAULT_PLANS[plan],
    createdAt: CREATED,
    trialEndsAt: plan === 'trial' ? plus(CREATED, 21 * DAY) : null,
    subscriptionStatus: 'active',
    cancelledAt: null,
    cycleAnchor: CREATED,
    usedThisCycle: 0,
    quotaExhaustedAt: null,
    ...over,
  };
}

/** Same tenant on another plan, as PATCH /admin/v1/tenants/{id} {plan} leaves it. */
function withPlan(input: BillingInput, plan: PlanName): BillingInput {
  return { ...input, plan, planConfig: DEFAULT_PLANS[plan] };
}

const accepting = (overage = 0) => ({ state: 'accepting', overage });
const blocked = (reason: string, retryAt: Date | null) => ({ state: 'blocked', reason, retryAt });

describe('billing state: one test per row of the SPEC table', () => {
  it('accepting → blocked: cap plan exhausts its allotment, after the grace period', () => {
    const exhaustedAt = at('2025-03-20T12:00:00.000Z');
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: exhaustedAt });
    assert.deepEqual(billingState(t, settings, plus(exhaustedAt, 71 * HOUR)), accepting());
    assert.deepEqual(billingState(t, settings, plus(exhaustedAt, 72 * HOUR)), blocked('quota_exhausted', at('2025-04-10T10:00:00.000Z')));
  });

  it('accepting → accepting: charge plan exhausts its allotment, overage is billed', () => {
    const exhaustedAt = at('2025-03-12T00:00:00.000Z');
    const t = tenant('pro', { usedThisCycle: 1_000_250, quotaExhaustedAt: exhaustedAt });
    // Long after a cap plan's grace would have ended, still in the same cycle.
    assert.deepEqual(billingState(t, settings, plus(exhaustedAt, 20 * DAY)), accepting(250));
  });

  it('accepting → blocked: 21-day trial ends with no conversion to a paid plan', () => {
    const t = tenant('trial', { usedThisCycle: 10 });
    assert.deepEqual(billingState(t, settings, plus(CREATED, 20 * DAY)), accepting());
    assert.deepEqual(billingState(t, settings, plus(CREATED, 21 * DAY)), blocked('trial_expired', null));
  });

  it('accepting → blocked: subscription cancelled, grace period elapsed', () => {
    const cancelledAt = at('2025-03-15T08:00:00.000Z');
    const t = tenant('business', { subscriptionStatus: 'cancelled', cancelledAt });
    assert.deepEqual(billingState(t, settings, plus(cancelledAt, 6 * DAY)), accepting());
    assert.deepEqual(billingState(t, settings, plus(cancelledAt, 7 * DAY)), blocked('subscription_cancelled', null));
  });

  it('blocked → accepting: upgrade to a paid plan (from a hard cap)', () => {
    const exhaustedAt = at('2025-03-20T12:00:00.000Z');
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: exhaustedAt });
    const now = plus(exhaustedAt, 100 * HOUR);
    assert.equal(billingState(t, settings, now).state, 'blocked');
    // Same instant, same usage, same exhaustion stamp: only the plan changed.
    assert.deepEqual(billingState(withPlan(t, 'pro'), settings, now), accepting(0));
  });

  it('blocked → accepting: reactivation of a cancelled subscription', () => {
    const cancelledAt = at('2025-03-15T08:00:00.000Z');
    const t = tenant('pro', { subscriptionStatus: 'cancelled', cancelledAt, usedThisCycle: 5 });
    const now = plus(cancelledAt, 30 * DAY);
    assert.equal(billingState(t, settings, now).state, 'blocked');
    assert.deepEqual(billingState({ ...t, subscriptionStatus: 'active', cancelledAt: null }, settings, now), accepting());
  });

  it('blocked (hard cap) → accepting: next billing cycle begins (cap-policy plans only)', () => {
    const exhaustedAt = at('2025-03-20T12:00:00.000Z');
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: exhaustedAt });
    const cycleEnd = at('2025-04-10T10:00:00.000Z');
    assert.equal(billingState(t, settings, plus(cycleEnd, -1)).state, 'blocked');
    // The caller passes the new cycle's usage (0); the old stamp belongs to the old cycle.
    assert.deepEqual(billingState({ ...t, usedThisCycle: 0 }, settings, cycleEnd), accepting());
  });
});

describe('billing state: boundaries', () => {
  const exhaustedAt = at('2025-03-20T12:00:00.000Z');
  const capped = tenant('trial', { usedThisCycle: 10_000, quotaExhaustedAt: exhaustedAt, trialEndsAt: null });
  const graceEnd = plus(exhaustedAt, 72 * HOUR);

  it('quota grace: one ms before its end accepts, exactly at its end blocks', () => {
    assert.deepEqual(billingState(capped, settings, plus(graceEnd, -1)), accepting());
    assert.equal(billingState(capped, settings, graceEnd).state, 'blocked');
  });

  it('quota grace follows QUOTA_GRACE_HOURS; 0 blocks at the moment of exhaustion', () => {
    assert.equal(billingState(capped, { ...settings, quotaGraceHours: 1 }, plus(exhaustedAt, HOUR)).state, 'blocked');
    assert.equal(billingState(capped, { ...settings, quotaGraceHours: 0 }, exhaustedAt).state, 'blocked');
  });

  it('trial: its last ms accepts, trialEndsAt itself blocks', () => {
    const t = tenant('trial');
    const end = plus(CREATED, 21 * DAY);
    assert.deepEqual(billingState(t, settings, plus(end, -1)), accepting());
    assert.deepEqual(billingState(t, settings, end), blocked('trial_expired', null));
  });

  it('cancellation grace: one ms before its end accepts, exactly at its end blocks', () => {
    const cancelledAt = at('2025-03-15T08:00:00.000Z');
    const t = tenant('starter', { subscriptionStatus: 'cancelled', cancelledAt });
    const end = plus(cancelledAt, 168 * HOUR);
    assert.deepEqual(billingState(t, settings, plus(end, -1)), accepting());
    assert.equal(billingState(t, settings, end).state, 'blocked');
    assert.equal(billingState(t, { ...settings, cancelGraceHours: 1 }, plus(cancelledAt, HOUR)).state, 'blocked');
  });

  it('a grace period that outlasts the cycle never blocks: the new cycle starts fresh', () => {
    const late = at('2025-04-09T10:00:00.000Z'); // 24 h before the cycle ends
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: late });
    assert.deepEqual(billingState(t, settings, at('2025-04-10T09:59:59.999Z')), accepting());
    assert.deepEqual(billingState({ ...t, usedThisCycle: 3 }, settings, at('2025-04-12T10:00:00.000Z')), accepting());
  });

  it('cycle rollover on the anchor day: blocked until the anchor instant, accepting from it', () => {
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: at('2025-03-11T00:00:00.000Z') });
    assert.deepEqual(billingState(t, settings, at('2025-04-10T09:59:59.999Z')), blocked('quota_exhausted', at('2025-04-10T10:00:00.000Z')));
    assert.deepEqual(billingState({ ...t, usedThisCycle: 0 }, settings, at('2025-04-10T10:00:00.000Z')), accepting());
  });

  it('a stamp from the previous cycle is ignored even if the caller passes a stale usage', () => {
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: at('2025-03-11T00:00:00.000Z') });
    // No proof the grace has elapsed in this cycle, so the grace counts from now.
    assert.deepEqual(billingState(t, settings, at('2025-04-20T00:00:00.000Z')), accepting());
  });

  it('a stamp exactly at the cycle start belongs to the cycle', () => {
    const start = at('2025-04-10T10:00:00.000Z');
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: start });
    assert.deepEqual(billingState(t, settings, plus(start, 72 * HOUR)), blocked('quota_exhausted', at('2025-05-10T10:00:00.000Z')));
  });

  it('anchor on the 31st: the cycle renews on the last day of February (non-leap and leap years)', () => {
    const anchor = at('2025-01-31T00:00:00.000Z');
    const t = tenant('starter', { createdAt: anchor, cycleAnchor: anchor, usedThisCycle: 50_000, quotaExhaustedAt: at('2025-02-10T00:00:00.000Z') });
    assert.deepEqual(billingState(t, settings, at('2025-02-27T23:59:59.999Z')), blocked('quota_exhausted', at('2025-02-28T00:00:00.000Z')));
    assert.deepEqual(billingState({ ...t, usedThisCycle: 0 }, settings, at('2025-02-28T00:00:00.000Z')), accepting());

    const leap = at('2024-01-31T00:00:00.000Z');
    const l = tenant('starter', { createdAt: leap, cycleAnchor: leap, usedThisCycle: 50_000, quotaExhaustedAt: at('2024-02-10T00:00:00.000Z') });
    assert.deepEqual(billingState(l, settings, at('2024-02-28T12:00:00.000Z')), blocked('quota_exhausted', at('2024-02-29T00:00:00.000Z')));
  });

  it('anchor on the 31st: the March cycle starts on Feb 28 and ends on Mar 31; April ends on Apr 30', () => {
    const anchor = at('2025-01-31T00:00:00.000Z');
    const base = { createdAt: anchor, cycleAnchor: anchor, usedThisCycle: 50_000 };
    // Exhausted on Mar 1, inside the cycle that began on Feb 28.
    const mar = tenant('starter', { ...base, quotaExhaustedAt: at('2025-03-01T00:00:00.000Z') });
    assert.deepEqual(billingState(mar, settings, at('2025-03-10T00:00:00.000Z')), blocked('quota_exhausted', at('2025-03-31T00:00:00.000Z')));
    const apr = tenant('starter', { ...base, quotaExhaustedAt: at('2025-04-01T00:00:00.000Z') });
    assert.deepEqual(billingState(apr, settings, at('2025-04-10T00:00:00.000Z')), blocked('quota_exhausted', at('2025-04-30T00:00:00.000Z')));
  });
});

describe('billing state: overage, upgrades, policy, precedence', () => {
  it('charge plans count overage as used − allotment, never below 0', () => {
    const pro = DEFAULT_PLANS.pro;
    assert.equal(billableOverage(pro, 0), 0);
    assert.equal(billableOverage(pro, 999_999), 0);
    assert.equal(billableOverage(pro, 1_000_000), 0);
    assert.equal(billableOverage(pro, 1_000_001), 1);
    const now = at('2025-03-25T00:00:00.000Z');
    assert.deepEqual(billingState(tenant('enterprise', { usedThisCycle: 100_000_007 }), settings, now), accepting(7));
    assert.deepEqual(billingState(tenant('business', { usedThisCycle: 9_000_000 }), settings, now), accepting(0));
  });

  it('cap plans bill no overage, even for events accepted during the grace period', () => {
    const t = tenant('starter', { usedThisCycle: 60_000, quotaExhaustedAt: at('2025-03-20T00:00:00.000Z') });
    assert.deepEqual(billingState(t, settings, at('2025-03-21T00:00:00.000Z')), accepting(0));
  });

  it('the policy comes from the configured plan, not its name (PLANS_FILE may make starter a charge plan)', () => {
    const t = tenant('starter', {
      planConfig: { ...DEFAULT_PLANS.starter, policy: 'charge' },
      usedThisCycle: 50_010,
      quotaExhaustedAt: at('2025-03-11T00:00:00.000Z'),
    });
    assert.deepEqual(billingState(t, settings, at('2025-04-01T00:00:00.000Z')), accepting(10));
  });

  it('an expired trial converting to starter (a paid cap plan) accepts at once', () => {
    const t = tenant('trial', { usedThisCycle: 10_000, quotaExhaustedAt: at('2025-03-12T00:00:00.000Z') });
    const now = plus(CREATED, 25 * DAY);
    assert.deepEqual(billingState(t, settings, now), blocked('trial_expired', null));
    // The larger allotment (50k) is not exhausted, so the trial's quota stamp no longer applies.
    assert.deepEqual(billingState(withPlan(t, 'starter'), settings, now), accepting());
  });

  it('a trial tenant without trialEndsAt (operator-extended) does not expire', () => {
    assert.deepEqual(billingState(tenant('trial', { trialEndsAt: null }), settings, plus(CREATED, 400 * DAY)), accepting());
  });

  it('a cancelled subscription without cancelledAt is blocked: no grace can be placed on the clock', () => {
    assert.deepEqual(billingState(tenant('pro', { subscriptionStatus: 'cancelled' }), settings, CREATED), blocked('subscription_cancelled', null));
  });

  it('cancelledAt is ignored once the subscription is active again', () => {
    const t = tenant('pro', { cancelledAt: at('2025-01-01T00:00:00.000Z') });
    assert.deepEqual(billingState(t, settings, at('2025-03-20T00:00:00.000Z')), accepting());
  });

  it('precedence: subscription_cancelled, then trial_expired, then quota_exhausted', () => {
    const everything = tenant('trial', {
      usedThisCycle: 10_000,
      quotaExhaustedAt: at('2025-03-11T00:00:00.000Z'),
      subscriptionStatus: 'cancelled',
      cancelledAt: at('2025-03-12T00:00:00.000Z'),
    });
    const now = plus(CREATED, 22 * DAY); // all three deadlines are past, still the first cycle
    assert.deepEqual(billingState(everything, settings, now), blocked('subscription_cancelled', null));
    const reactivated = { ...everything, subscriptionStatus: 'active' as const, cancelledAt: null };
    assert.deepEqual(billingState(reactivated, settings, now), blocked('trial_expired', null));
    assert.deepEqual(billingState({ ...reactivated, trialEndsAt: null }, settings, now), blocked('quota_exhausted', at('2025-04-10T10:00:00.000Z')));
  });
});

describe('retryAfterSeconds', () => {
  const now = at('2025-04-09T10:00:00.000Z');

  it('gives whole seconds until retryAt, rounded up', () => {
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'quota_exhausted', retryAt: plus(now, DAY) }, now), 86_400);
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'quota_exhausted', retryAt: plus(now, 1_500) }, now), 2);
  });

  it('is at least 1, even at or past retryAt', () => {
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'quota_exhausted', retryAt: plus(now, 1) }, now), 1);
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'quota_exhausted', retryAt: now }, now), 1);
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'quota_exhausted', retryAt: plus(now, -5_000) }, now), 1);
  });

  it('is undefined when accepting or when only an operator lifts the block', () => {
    assert.equal(retryAfterSeconds({ state: 'accepting', overage: 0 }, now), undefined);
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'trial_expired', retryAt: null }, now), undefined);
    assert.equal(retryAfterSeconds({ state: 'blocked', reason: 'subscription_cancelled', retryAt: null }, now), undefined);
  });

  it('for a real quota block, points at the next cycle start', () => {
    const t = tenant('starter', { usedThisCycle: 50_000, quotaExhaustedAt: at('2025-03-20T00:00:00.000Z') });
    assert.equal(retryAfterSeconds(billingState(t, settings, now), now), 86_400);
  });
});

describe('billing state: properties', () => {
  const instant = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }).map((ms) => new Date(ms));
  const plan = fc.constantFrom<LimitedPlanName>('trial', 'starter', 'pro', 'business', 'enterprise');
  // Anchor up to ~2 years and the exhaustion up to 40 days before now, usage around the allotment,
  // so that every branch (grace, block, stale stamp, charge) is drawn.
  const tenantAt = fc.record({
    plan,
    now: instant,
    anchorBack: fc.integer({ min: 0, max: 800 * DAY }),
    stampBack: fc.integer({ min: 0, max: 40 * DAY }),
    usedFactor: fc.double({ min: 0.5, max: 3, noNaN: true }),
  });

  it('charge plans are never blocked by quota; a quota block needs the grace elapsed this cycle and lifts at a later instant', () => {
    let blocks = 0;
    fc.assert(
      fc.property(tenantAt, ({ plan: p, now, anchorBack, stampBack, usedFactor }) => {
        const stamp = plus(now, -stampBack);
        const used = Math.floor(DEFAULT_PLANS[p].monthly_events! * usedFactor);
        const input = tenant(p, { cycleAnchor: plus(now, -anchorBack), trialEndsAt: null, usedThisCycle: used, quotaExhaustedAt: stamp });
        const state = billingState(input, settings, now);
        if (DEFAULT_PLANS[p].policy === 'charge') assert.deepEqual(state, accepting(billableOverage(DEFAULT_PLANS[p], used)));
        if (state.state === 'blocked') {
          blocks++;
          assert.equal(state.reason, 'quota_exhausted');
          assert.ok(stampBack >= 72 * HOUR);
          assert.ok(state.retryAt !== null && state.retryAt > now && state.retryAt > stamp);
          const seconds = retryAfterSeconds(state, now);
          assert.ok(seconds !== undefined && Number.isInteger(seconds) && seconds >= 1);
        }
      }),
      { numRuns: 500 },
    );
    assert.ok(blocks > 0, 'the generator never reached a block');
  });
});

describe('billing state: the unlimited plan', () => {
  it('is never blocked, whatever its usage, stamp, trial end or cancellation, and never has overage', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }),
        fc.integer({ min: 0, max: 2_000_000_000 }),
        fc.boolean(),
        fc.boolean(),
        (nowMs, used, cancelled, stamped) => {
          const now = new Date(nowMs);
          const input = tenant('unlimited', {
            usedThisCycle: used,
            quotaExhaustedAt: stamped ? plus(now, -100 * DAY) : null,
            subscriptionStatus: cancelled ? 'cancelled' : 'active',
            cancelledAt: cancelled ? plus(now, -365 * DAY) : null,
            trialEndsAt: plus(now, -DAY),
          });
          assert.deepEqual(billingState(input, settings, now), accepting(0));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('has no allotment and no overage', () => {
    assert.equal(DEFAULT_PLANS.unlimited.monthly_events, null);
    assert.equal(DEFAULT_PLANS.unlimited.requests_per_minute, null);
    assert.equal(billableOverage(DEFAULT_PLANS.unlimited, 5_000_000_000), 0);
  });
});
