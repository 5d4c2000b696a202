import type { Queryable } from './db.js';

export interface ExceptionRecord {
  exception_id: string;
  product_id: string;
  product_version: string;
  exception_type: string;
  severity: 'fatal' | 'non_fatal';
  occurred_at: string;
  actor_id: string;
  message: string | null;
  stack_trace: string | null;
  breadcrumbs: unknown;
  session_id: string | null;
  account_id: string | null;
  license_id: string | null;
  environment_context: unknown;
  fingerprint: string;
}

/**
 * Stores an exception once per (tenant, exception_id): a repeat is accepted and changes nothing.
 * Returns the fingerprint stored for that id (the first one).
 */
export async function insertException(q: Queryable, tenantId: string, e: ExceptionRecord, receivedAt: Date): Promise<string> {
  const rows = await q.query<{ fingerprint: string }>(
    `WITH ins AS (
       INSERT INTO exceptions (tenant_id, exception_id, product_id, product_version, exception_type, severity, occurred_at, received_at,
                               actor_id, message, stack_trace, breadcrumbs, session_id, account_id, license_id, environment_context, fingerprint)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16::jsonb, $17)
       ON CONFLICT (tenant_id, exception_id) DO NOTHING RETURNING fingerprint)
     SELECT fingerprint FROM ins UNION ALL SELECT fingerprint FROM exceptions WHERE tenant_id = $1 AND exception_id = $2 LIMIT 1`,
    [
      tenantId,
      e.exception_id,
      e.product_id,
      e.product_version,
      e.exception_type,
      e.severity,
      e.occurred_at,
      receivedAt,
      e.actor_id,
      e.message,
      e.stack_trace,
      e.breadcrumbs === undefined ? null : JSON.stringify(e.breadcrumbs),
      e.session_id,
      e.account_id,
      e.license_id,
      e.environment_context === undefined ? null : JSON.stringify(e.environment_context),
      e.fingerprint,
    ],
  );
  return rows[0]!.fingerprint;
}
