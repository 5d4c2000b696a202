import { ENVIRONMENT_FIELD_KEYS } from '../domain/environment.js';
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
  /** The environment fields of environment_context (src/domain/environment.ts), when it has any. */
  environment?: Record<string, unknown> | undefined;
  fingerprint: string;
}

/**
 * Stores an exception once per (tenant, exception_id): a repeat is accepted and changes nothing.
 * Returns the fingerprint stored for that id (the first one). In the same statement, a new
 * exception's environment goes where X-Environment-Data goes (environments, per actor and session,
 * '' for none), so every reader of the environment sees it (CONTRACT.md: both feed
 * /v1/environment/*); its fields replace those fields of a header kept there, other keys stay.
 */
/** The fingerprint stored for an exception id, if the tenant has it. */
export async function storedFingerprint(q: Queryable, tenantId: string, exceptionId: string): Promise<string | undefined> {
  const rows = await q.query<{ fingerprint: string }>('SELECT fingerprint FROM exceptions WHERE tenant_id = $1 AND exception_id = $2', [tenantId, exceptionId]);
  return rows[0]?.fingerprint;
}

export async function insertException(q: Queryable, tenantId: string, e: ExceptionRecord, receivedAt: Date): Promise<string> {
  const rows = await q.query<{ fingerprint: string }>(
    `WITH ins AS (
       INSERT INTO exceptions (tenant_id, exception_id, product_id, product_version, exception_type, severity, occurred_at, received_at,
                               actor_id, message, stack_trace, breadcrumbs, session_id, account_id, license_id, environment_context, fingerprint)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16::jsonb, $17)
       ON CONFLICT (tenant_id, exception_id) DO NOTHING RETURNING fingerprint),
     env AS (
       INSERT INTO environments AS v (tenant_id, actor_id, session_id, data, received_at)
       SELECT $1, $9, coalesce($13, ''), $18::jsonb, $8 FROM ins WHERE $18::jsonb IS NOT NULL
       ON CONFLICT (tenant_id, actor_id, session_id) DO UPDATE SET data = (v.data - $19::text[]) || excluded.data, received_at = excluded.received_at)
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
      e.environment === undefined ? null : JSON.stringify(e.environment),
      ENVIRONMENT_FIELD_KEYS,
    ],
  );
  return rows[0]!.fingerprint;
}
