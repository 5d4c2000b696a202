import type { Queryable } from './db.js';

/**
 * Accepted events per tenant and billing period are counted in a few rows, so that concurrent
 * batches of one tenant do not queue on one row lock; readers sum them. The counting itself is
 * part of each batch's statement (event-batch.ts).
 */
export const USAGE_SHARDS = 8;

export async function getUsage(q: Queryable, tenantId: string, periodStart: Date): Promise<number> {
  const [row] = await q.query<{ n: number }>('SELECT coalesce(sum(events), 0)::bigint AS n FROM usage_counters WHERE tenant_id = $1 AND period_start = $2', [
    tenantId,
    periodStart,
  ]);
  return Number(row?.n ?? 0);
}
