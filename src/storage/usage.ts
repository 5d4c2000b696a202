import type { Queryable } from './db.js';

const SHARDS = 8;

/** Adds accepted events to the tenant's counter for the billing period, in the caller's transaction. */
export async function addUsage(q: Queryable, tenantId: string, periodStart: Date, n: number): Promise<void> {
  if (n <= 0) return;
  await q.query(
    `INSERT INTO usage_counters (tenant_id, period_start, shard, events) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, period_start, shard) DO UPDATE SET events = usage_counters.events + excluded.events`,
    [tenantId, periodStart, Math.floor(Math.random() * SHARDS), n],
  );
}

export async function getUsage(q: Queryable, tenantId: string, periodStart: Date): Promise<number> {
  const [row] = await q.query<{ n: number }>(
    'SELECT coalesce(sum(events), 0)::bigint AS n FROM usage_counters WHERE tenant_id = $1 AND period_start = $2',
    [tenantId, periodStart],
  );
  return Number(row?.n ?? 0);
}

/**
 * Stamps the moment the tenant's usage in this cycle first reached its allotment (once per
 * cycle). Runs in the batch's transaction, right after addUsage, so the count it reads is exact.
 */
export async function stampQuotaExhaustion(q: Queryable, tenantId: string, periodStart: Date, allotment: number, now: Date): Promise<void> {
  await q.query(
    `UPDATE tenants SET quota_exhausted_at = $4, quota_period_start = $2
      WHERE id = $1 AND quota_period_start IS DISTINCT FROM $2
        AND (SELECT coalesce(sum(events), 0) FROM usage_counters WHERE tenant_id = $1 AND period_start = $2) >= $3`,
    [tenantId, periodStart, allotment, now],
  );
}
