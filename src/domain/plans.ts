import { readFileSync } from 'node:fs';

export const PLAN_NAMES = ['trial', 'starter', 'pro', 'business', 'enterprise', 'unlimited'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/** The plans an operator sells; `unlimited` is the self-hosting plan, with nothing to configure. */
export type LimitedPlanName = Exclude<PlanName, 'unlimited'>;

export interface Plan {
  /** Accepted events per billing cycle; null = no allotment (the unlimited plan). */
  monthly_events: number | null;
  policy: 'cap' | 'charge';
  /** Requests per minute to POST /v1/events; null = no rate limit (the unlimited plan). */
  requests_per_minute: number | null;
  /** Days of raw events kept for the plan's tenants; absent or null = EVENT_RETENTION_DAYS (0: forever). */
  event_retention_days?: number | null;
}

export type Plans = Record<PlanName, Plan>;

// CONTRACT.md's defaults; PLANS_FILE is merged over them (all but `unlimited`, which has no limits to set).
export const DEFAULT_PLANS: Plans = {
  trial: { monthly_events: 10_000, policy: 'cap', requests_per_minute: 30 },
  starter: { monthly_events: 50_000, policy: 'cap', requests_per_minute: 120 },
  pro: { monthly_events: 1_000_000, policy: 'charge', requests_per_minute: 600 },
  business: { monthly_events: 10_000_000, policy: 'charge', requests_per_minute: 3000 },
  enterprise: { monthly_events: 100_000_000, policy: 'charge', requests_per_minute: 6000 },
  // Self-hosted installs (CONTRACT.md): no allotment, no rate limit, every feature, never blocked.
  unlimited: { monthly_events: null, policy: 'charge', requests_per_minute: null },
};

/** Plans that see the account and license endpoints (and have account context on by default). */
export const ACCOUNT_PLANS: readonly PlanName[] = ['trial', 'business', 'enterprise', 'unlimited'];

/** Plans that nothing ever blocks: no allotment, no trial end, no cancellation block. */
export const NEVER_BLOCKED: readonly PlanName[] = ['unlimited'];

export function isPlanName(p: unknown): p is PlanName {
  return typeof p === 'string' && (PLAN_NAMES as readonly string[]).includes(p);
}

export function mergePlans(overrides: unknown): Plans {
  const plans: Plans = structuredClone(DEFAULT_PLANS);
  if (overrides === undefined) return plans;
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) throw new Error('the plans file must hold a JSON object of plans');
  for (const [name, value] of Object.entries(overrides)) {
    if (!isPlanName(name)) throw new Error(`the plans file names an unknown plan "${name}" (plans: ${PLAN_NAMES.filter((p) => p !== 'unlimited').join(', ')})`);
    if (name === 'unlimited') throw new Error('the plans file cannot change the unlimited plan: it has no allotment and no rate limit to set');
    if (typeof value !== 'object' || value === null) throw new Error(`the plans file's ${name} must be an object`);
    const merged = { ...plans[name], ...(value as Partial<Plan>) };
    if (typeof merged.monthly_events !== 'number' || !Number.isFinite(merged.monthly_events) || merged.monthly_events < 0) {
      throw new Error(`the plans file's ${name}.monthly_events must be a number of events, 0 or more`);
    }
    if (merged.policy !== 'cap' && merged.policy !== 'charge') throw new Error(`the plans file's ${name}.policy must be "cap" or "charge"`);
    if (typeof merged.requests_per_minute !== 'number' || !Number.isFinite(merged.requests_per_minute) || merged.requests_per_minute < 1) {
      throw new Error(`the plans file's ${name}.requests_per_minute must be a number, 1 or more`);
    }
    const days = merged.event_retention_days;
    if (days !== undefined && days !== null && !(Number.isInteger(days) && days >= 0)) {
      throw new Error(`the plans file's ${name}.event_retention_days must be a whole number of days, 0 (forever) or more, or null`);
    }
    plans[name] = merged;
  }
  return plans;
}

export function loadPlans(file: string | undefined): Plans {
  if (!file) return mergePlans(undefined);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`PLANS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`PLANS_FILE ${file} is not valid JSON`, { cause: err });
  }
  try {
    return mergePlans(parsed);
  } catch (err) {
    throw new Error(`PLANS_FILE ${file}: ${(err as Error).message}`, { cause: err });
  }
}
