import { AppError, notFound } from '../errors.js';
import { isUuidText } from '../domain/text.js';
import { billableOverage, type BillingSettings } from '../domain/billing.js';
import { tenantBilling } from '../storage/billing-state.js';
import { PERMISSIONS, type Permission } from '../domain/keys.js';
import { ACCOUNT_PLANS, PLAN_NAMES, type PlanName, type Plans } from '../domain/plans.js';
import type { Db } from '../storage/db.js';
import { decodeCursor, encodeCursor } from '../domain/cursor.js';
import {
  getTenant,
  insertApiKey,
  insertTenant,
  listTenants as listTenantRows,
  revokeApiKey,
  updateTenant,
  type IssuedKey,
  type TenantRow,
} from '../storage/tenants.js';

// The operator's operations, shared by /admin/v1 and `npm run admin`.
export interface AdminDeps {
  db: Db;
  plans: Plans;
  trialDays: number;
  settings: BillingSettings;
  now?: () => Date;
}

export interface TenantView {
  id: string;
  name: string;
  plan: PlanName;
  billing_state: 'accepting' | 'blocked';
  block_reason: string | null;
  trial_ends_at: string | null;
  subscription_status: 'active' | 'cancelled';
  cancelled_at: string | null;
  account_context_enabled: boolean;
  event_retention_days: number | null;
  created_at: string;
  usage: { period_start: string; period_end: string; events: number; allotment: number | null; overage: number };
}

export async function tenantView(deps: AdminDeps, t: TenantRow): Promise<TenantView> {
  const now = deps.now?.() ?? new Date();
  const { state, period, used } = await tenantBilling(deps.db, deps.plans, deps.settings, t, now, true);
  return {
    id: t.id,
    name: t.name,
    plan: t.plan,
    billing_state: state.state,
    block_reason: state.state === 'blocked' ? state.reason : null,
    trial_ends_at: t.trial_ends_at,
    subscription_status: t.subscription_status,
    cancelled_at: t.cancelled_at,
    account_context_enabled: t.account_context_enabled,
    event_retention_days: t.event_retention_days,
    created_at: t.created_at,
    usage: {
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
      events: used ?? 0,
      allotment: deps.plans[t.plan].monthly_events,
      overage: billableOverage(deps.plans[t.plan], used ?? 0),
    },
  };
}

async function requireTenant(deps: AdminDeps, id: string): Promise<TenantRow> {
  const t = isUuidText(id) ? await getTenant(deps.db, id) : undefined;
  if (!t) throw notFound('not_found', 'tenant');
  return t;
}

/** A tenant with its first keys: one ingest key (safe to embed in an app) and one admin key with all four permissions. */
export async function createTenant(deps: AdminDeps, input: { name: string; plan: PlanName }): Promise<{ tenant: TenantView; api_keys: IssuedKey[] }> {
  const now = deps.now?.() ?? new Date();
  const { tenant, keys } = await deps.db.tx(async (q) => {
    const tenant = await insertTenant(q, {
      name: input.name,
      plan: input.plan,
      accountContextEnabled: ACCOUNT_PLANS.includes(input.plan),
      trialEndsAt: input.plan === 'trial' ? new Date(now.getTime() + deps.trialDays * 86_400_000) : null,
      now,
    });
    const keys = [await insertApiKey(q, tenant.id, 'ingest', ['ingest']), await insertApiKey(q, tenant.id, 'admin', [...PERMISSIONS])];
    return { tenant, keys };
  });
  return { tenant: await tenantView(deps, tenant), api_keys: keys };
}

/** Every tenant, oldest first, a page at a time: how an operator finds the demo tenant whose keys were lost. */
export async function listTenants(
  deps: AdminDeps,
  opts: { limit?: number | undefined; cursor?: string | undefined },
): Promise<{ data: TenantView[]; next_cursor: string | null }> {
  const limit = opts.limit ?? 50;
  const after = opts.cursor === undefined ? undefined : decodeCursor(opts.cursor, ['uuid'] as const)?.[0];
  if (opts.cursor !== undefined && after === undefined) {
    throw new AppError(400, 'validation_error', 'cursor: not a cursor this API gave', { errors: [{ field: 'cursor', message: 'invalid' }] });
  }
  const rows = await listTenantRows(deps.db, { after, limit: limit + 1 });
  const data = await Promise.all(rows.slice(0, limit).map((t) => tenantView(deps, t)));
  return { data, next_cursor: rows.length > limit ? encodeCursor([data[data.length - 1]!.id]) : null };
}

export async function showTenant(deps: AdminDeps, id: string): Promise<TenantView> {
  return tenantView(deps, await requireTenant(deps, id));
}

export async function patchTenant(
  deps: AdminDeps,
  id: string,
  patch: { plan?: PlanName; account_context_enabled?: boolean; event_retention_days?: number | null },
): Promise<TenantView> {
  const current = await requireTenant(deps, id);
  // Account context is on by default on the plans with account views (CONTRACT.md): a tenant that
  // moves onto one from a plan without them takes that default, so an upgrade shows the data that
  // was kept. An operator's "off" on such a plan, or a setting in the same call, stays.
  const gainsAccountViews = patch.plan !== undefined && ACCOUNT_PLANS.includes(patch.plan) && !ACCOUNT_PLANS.includes(current.plan);
  // An upgrade to a paid plan takes a blocked tenant to accepting at once (SPEC.md's billing
  // states): a cancelled subscription is taken up again by it, as a reactivation would.
  const upgrade = patch.plan !== undefined && patch.plan !== 'trial' && PLAN_NAMES.indexOf(patch.plan) > PLAN_NAMES.indexOf(current.plan);
  const resumes = upgrade && current.subscription_status === 'cancelled';
  // The trial is 21 days (TRIAL_DAYS) from the tenant's creation (CONTRACT.md), also for a tenant
  // moved onto it later; one that had a trial keeps its end.
  const trialEnd =
    patch.plan === 'trial' && current.trial_ends_at === null ? new Date(Date.parse(current.created_at) + deps.trialDays * 86_400_000) : undefined;
  // Only the settable fields are passed on, whatever else the caller's object holds.
  const t = await updateTenant(deps.db, id, {
    plan: patch.plan,
    account_context_enabled: patch.account_context_enabled ?? (gainsAccountViews ? true : undefined),
    event_retention_days: patch.event_retention_days,
    ...(trialEnd && { trial_ends_at: trialEnd }),
    ...(resumes && { subscription_status: 'active' as const, cancelled_at: null }),
  });
  return tenantView(deps, t!);
}

export async function cancelSubscription(deps: AdminDeps, id: string): Promise<TenantView> {
  const t = await requireTenant(deps, id);
  if (t.subscription_status === 'cancelled') return tenantView(deps, t);
  const updated = await updateTenant(deps.db, id, { subscription_status: 'cancelled', cancelled_at: deps.now?.() ?? new Date() });
  return tenantView(deps, updated!);
}

export async function reactivateSubscription(deps: AdminDeps, id: string): Promise<TenantView> {
  await requireTenant(deps, id);
  const updated = await updateTenant(deps.db, id, { subscription_status: 'active', cancelled_at: null });
  return tenantView(deps, updated!);
}

export async function issueKey(deps: AdminDeps, id: string, input: { name?: string; permissions: Permission[] }): Promise<IssuedKey> {
  await requireTenant(deps, id);
  if (input.permissions.length === 0)
    throw new AppError(400, 'validation_error', 'permissions: at least one', { errors: [{ field: 'permissions', message: 'at least one' }] });
  return insertApiKey(deps.db, id, input.name ?? 'key', input.permissions);
}

export async function revokeKey(deps: AdminDeps, id: string, keyId: string): Promise<void> {
  await requireTenant(deps, id);
  if (!isUuidText(keyId) || !(await revokeApiKey(deps.db, id, keyId))) throw notFound('not_found', 'API key');
}
