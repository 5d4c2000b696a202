import { readFileSync } from 'node:fs';

export const PLAN_NAMES = ['trial', 'starter', 'pro', 'business', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface Plan {
  monthly_events: number;
  policy: 'cap' | 'charge';
  requests_per_minute: number;
}

export type Plans = Record<PlanName, Plan>;

// CONTRACT.md's defaults; PLANS_FILE is merged over them.
export const DEFAULT_PLANS: Plans = {
  trial: { monthly_events: 10_000, policy: 'cap', requests_per_minute: 30 },
  starter: { monthly_events: 50_000, policy: 'cap', requests_per_minute: 120 },
  pro: { monthly_events: 1_000_000, policy: 'charge', requests_per_minute: 600 },
  business: { monthly_events: 10_000_000, policy: 'charge', requests_per_minute: 3000 },
  enterprise: { monthly_events: 100_000_000, policy: 'charge', requests_per_minute: 6000 },
};

/** Plans that see the account and license endpoints (and have account context on by default). */
export const ACCOUNT_PLANS: readonly PlanName[] = ['trial', 'business', 'enterprise'];

export function isPlanName(p: unknown): p is PlanName {
  return typeof p === 'string' && (PLAN_NAMES as readonly string[]).includes(p);
}

export function mergePlans(overrides: unknown): Plans {
  const plans: Plans = structuredClone(DEFAULT_PLANS);
  if (overrides === undefined) return plans;
  if (typeof overrides !== 'object' || overrides === null) throw new Error('plans file must hold a JSON object');
  for (const [name, value] of Object.entries(overrides)) {
    if (!isPlanName(name)) throw new Error(`plans file: unknown plan "${name}"`);
    const v = value as Partial<Plan>;
    const merged = { ...plans[name], ...v };
    if (!Number.isFinite(merged.monthly_events) || merged.monthly_events < 0) throw new Error(`plans file: ${name}.monthly_events`);
    if (merged.policy !== 'cap' && merged.policy !== 'charge') throw new Error(`plans file: ${name}.policy`);
    if (!Number.isFinite(merged.requests_per_minute) || merged.requests_per_minute < 1) throw new Error(`plans file: ${name}.requests_per_minute`);
    plans[name] = merged;
  }
  return plans;
}

export function loadPlans(file: string | undefined): Plans {
  return mergePlans(file ? JSON.parse(readFileSync(file, 'utf8')) : undefined);
}
