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
