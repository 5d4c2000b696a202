import { v7 as uuidv7 } from 'uuid';
import { catalogOf } from './catalog.js';
import type { Db, Queryable } from './db.js';
import type { Permission } from '../domain/keys.js';
import { generateApiKey } from '../domain/keys.js';
import type { PlanName } from '../domain/plans.js';
import { iso } from './rows.js';

export interface TenantRow {
  id: string;
  name: string;
  plan: PlanName;
  account_context_enabled: boolean;
  subscription_status: 'active' | 'cancelled';
  cancelled_at: string | null;
  trial_ends_at: string | null;
  cycle_anchor: string;
  created_at: string;
  updated_at: string;
  /** When usage first reached the allotment, in the cycle that starts at quota_period_start. */
  quota_exhausted_at: string | null;
  quota_period_start: string | null;
  /** Days of raw events kept; null = the plan's setting, then EVENT_RETENTION_DAYS. */
  event_retention_days: number | null;
}

export interface IssuedKey {
  id: string;
  name: string;
  key: string;
  permissions: Permission[];
}

const COLUMNS = `id, name, plan, account_context_enabled, subscription_status, cancelled_at, trial_ends_at,
  cycle_anchor, created_at, updated_at, quota_exhausted_at, quota_period_start, event_retention_days`;

function toTenant(r: Record<string, unknown>): TenantRow {
  return {
    id: r.id as string,
    name: r.name as string,
    plan: r.plan as PlanName,
    account_context_enabled: r.account_context_enabled as boolean,
    subscription_status: r.subscription_status as 'active' | 'cancelled',
    cancelled_at: iso(r.cancelled_at),
    trial_ends_at: iso(r.trial_ends_at),
    cycle_anchor: iso(r.cycle_anchor)!,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    quota_exhausted_at: iso(r.quota_exhausted_at),
    quota_period_start: iso(r.quota_period_start),
    event_retention_days: (r.event_retention_days as number | null) ?? null,
  };
}

export async function insertTenant(
  q: Queryable,
  t: { name: string; plan: PlanName; accountContextEnabled: boolean; trialEndsAt: Date | null; now: Date },
): Promise<TenantRow> {
  const rows = await q.query(
    `INSERT INTO tenants (id, name, plan, account_context_enabled, trial_ends_at, cycle_anchor, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6, $6) RETURNING ${COLUMNS}`,
    [uuidv7(), t.name, t.plan, t.accountContextEnabled, t.trialEndsAt, t.now],
  );
  return toTenant(rows[0]!);
}

export async function getTenant(q: Queryable, tenantId: string): Promise<TenantRow | undefined> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [tenantId]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

/** Tenants in creation order (ids are UUIDv7), after the id `after`; limit + 1 rows tell whether more follow. */
export async function listTenants(q: Queryable, opts: { after?: string | undefined; limit: number }): Promise<TenantRow[]> {
  const rows = await q.query(`SELECT ${COLUMNS} FROM tenants WHERE ($1::uuid IS NULL OR id > $1::uuid) ORDER BY id LIMIT $2`, [opts.after ?? null, opts.limit]);
  return rows.map(toTenant);
}

export async function countTenants(q: Queryable): Promise<number> {
  const [row] = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM tenants');
  return row?.n ?? 0;
}

export interface TenantPatch {
  plan?: PlanName;
  subscription_status?: 'active' | 'cancelled';
  cancelled_at?: Date | null;
  trial_ends_at?: Date | null;
  account_context_enabled?: boolean;
  event_retention_days?: number | null;
}

/**
 * One statement with a fixed text: each settable column is a parameter, and a column the patch
 * leaves out keeps its value. No part of the SQL comes from the caller's keys.
 */
export async function updateTenant(q: Queryable, tenantId: string, patch: TenantPatch): Promise<TenantRow | undefined> {
  const has = (k: keyof TenantPatch) => patch[k] !== undefined;
  const rows = await q.query(
    `UPDATE tenants SET
        plan = CASE WHEN $2 THEN $3 ELSE plan END,
        subscription_status = CASE WHEN $4 THEN $5 ELSE subscription_status END,
        cancelled_at = CASE WHEN $6 THEN $7::timestamptz ELSE cancelled_at END,
        trial_ends_at = CASE WHEN $8 THEN $9::timestamptz ELSE trial_ends_at END,
        account_context_enabled = CASE WHEN $10 THEN $11::boolean ELSE account_context_enabled END,
        event_retention_days = CASE WHEN $12 THEN $13::int ELSE event_retention_days END,
        updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [
      tenantId,
      has('plan'),
      patch.plan ?? null,
      has('subscription_status'),
      patch.subscription_status ?? null,
      has('cancelled_at'),
      patch.cancelled_at ?? null,
      has('trial_ends_at'),
      patch.trial_ends_at ?? null,
      has('account_context_enabled'),
      patch.account_context_enabled ?? null,
      has('event_retention_days'),
      patch.event_retention_days ?? null,
    ],
  );
  return rows[0] ? toTenant(rows[0]) : undefined;
}

export async function insertApiKey(q: Queryable, tenantId: string, name: string, permissions: Permission[]): Promise<IssuedKey> {
  const { key, prefix, hash } = generateApiKey();
  const id = uuidv7();
  await q.query('INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, permissions) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    tenantId,
    name,
    prefix,
    hash,
    permissions,
  ]);
  return { id, name, key, permissions };
}

/** Revokes a key of this tenant; false when the tenant has no such key. */
export async function revokeApiKey(q: Queryable, tenantId: string, keyId: string): Promise<boolean> {
  const rows = await q.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1 AND id = $2 RETURNING id', [tenantId, keyId]);
  return rows.length > 0;
}

/** Shared between requests where the store caches it (catalog.ts): read-only. */
export interface KeyPrincipal {
  readonly keyId: string;
  readonly permissions: readonly Permission[];
  readonly tenant: Readonly<TenantRow>;
}

/** The live key with this hash and its tenant, in one round trip (or none, where cached: catalog.ts). */
export function findKeyByHash(db: Db, hash: string): Promise<KeyPrincipal | undefined> {
  return catalogOf(db).read(
    `key ${hash}`,
    () => keyByHash(db, hash),
    (principal) => principal !== undefined,
  );
}

const TENANT_COLUMNS = COLUMNS.split(',')
  .map((c) => 't.' + c.trim())
  .join(', ');

async function keyByHash(q: Queryable, hash: string): Promise<KeyPrincipal | undefined> {
  const rows = await q.query(
    `SELECT k.id AS key_id, k.permissions, ${TENANT_COLUMNS}
       FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
    [hash],
  );
  const r = rows[0];
  if (!r) return undefined;
  return { keyId: r.key_id as string, permissions: r.permissions as Permission[], tenant: toTenant(r) };
}
