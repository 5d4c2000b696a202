import type { Queryable } from './db.js';

export interface EventRecord {
  event_id: string;
  product_id: string;
  product_version: string;
  category: string;
  name: string;
  occurred_at: string;
  actor_id: string;
  session_id: string | null;
  account_id: string | null;
  license_id: string | null;
  properties: Record<string, string | number | boolean> | null;
  schema_version: string | null;
}

/**
 * The bulk insert of accepted events: the rows come as one JSON array parameter, and ids already
 * stored for this tenant are skipped by the unique index. `$t`, `$r` and `$j` name the parameters
 * holding the tenant id, the receive time and the JSON rows. One text, inside a batch's single
 * statement (event-batch.ts) and in the benchmark's raw ceiling.
 */
export function eventsInsertSql(t: string, r: string, j: string): string {
  return `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at,
                         actor_id, session_id, account_id, license_id, properties, schema_version)
     SELECT ${t}, r.event_id, r.product_id, r.product_version, r.category, r.name, r.occurred_at, ${r},
            r.actor_id, r.session_id, r.account_id, r.license_id, r.properties, r.schema_version
       FROM json_to_recordset(${j}::json) AS r(event_id uuid, product_id uuid, product_version text, category text, name text,
            occurred_at timestamptz, actor_id text, session_id uuid, account_id text, license_id text, properties jsonb,
            schema_version text)
     ON CONFLICT (tenant_id, event_id) DO NOTHING`;
}

/** Which of these event ids the tenant already has (lower-case UUID text). */
export async function storedEventIds(q: Queryable, tenantId: string, eventIds: readonly string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await q.query<{ event_id: string }>('SELECT event_id::text AS event_id FROM events WHERE tenant_id = $1 AND event_id = ANY($2::uuid[])', [
    tenantId,
    eventIds,
  ]);
  return new Set(rows.map((r) => r.event_id));
}

/** Counts events of a tenant (tests, benchmarks, operators). */
export async function countEvents(q: Queryable, tenantId: string): Promise<number> {
  const [row] = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenantId]);
  return row?.n ?? 0;
}
