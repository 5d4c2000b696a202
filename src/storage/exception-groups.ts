import type { Queryable } from './db.js';
import { iso } from './rows.js';

// GET /v1/exceptions: exceptions grouped by fingerprint, from the stored exceptions themselves
// (not the rollup), so every filter is exact and current.
export interface ExceptionFilter {
  productId?: string | undefined;
  version?: string | undefined;
  severity?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  accountId?: string | undefined;
  licenseId?: string | undefined;
  before?: { lastSeen: string; fingerprint: string } | undefined;
  limit: number;
}

export async function exceptionGroups(q: Queryable, tenantId: string, f: ExceptionFilter) {
  const rows = await q.query(
    `SELECT * FROM (
       SELECT fingerprint, count(*) AS count, count(DISTINCT actor_id) AS affected_actors, min(occurred_at) AS first_seen, max(occurred_at) AS last_seen,
              array_agg(DISTINCT product_version ORDER BY product_version) AS versions,
              count(*) FILTER (WHERE severity = 'fatal') AS fatal,
              (array_agg(json_build_object('exception_id', exception_id, 'exception_type', exception_type, 'severity', severity, 'message', message,
                         'stack_trace', stack_trace, 'occurred_at', occurred_at, 'product_version', product_version) ORDER BY occurred_at DESC))[1] AS sample
         FROM exceptions
        WHERE tenant_id = $1 AND ($2::uuid IS NULL OR product_id = $2) AND ($3::text IS NULL OR product_version = $3)
          AND ($4::text IS NULL OR severity = $4) AND ($5::timestamptz IS NULL OR occurred_at >= $5) AND ($6::timestamptz IS NULL OR occurred_at < $6)
          AND ($7::text IS NULL OR account_id = $7) AND ($8::text IS NULL OR license_id = $8)
        GROUP BY fingerprint) g
      WHERE ($9::timestamptz IS NULL OR (g.last_seen, g.fingerprint) < ($9::timestamptz, $10::text))
      ORDER BY g.last_seen DESC, g.fingerprint DESC LIMIT $11`,
    [
      tenantId,
      f.productId ?? null,
      f.version ?? null,
      f.severity ?? null,
      f.since ?? null,
      f.until ?? null,
      f.accountId ?? null,
      f.licenseId ?? null,
      f.before?.lastSeen ?? null,
      f.before?.fingerprint ?? null,
      f.limit,
    ],
  );
  return rows.map((r) => {
    const sample = (typeof r.sample === 'string' ? JSON.parse(r.sample) : r.sample) as {
      exception_id: string;
      exception_type: string;
      severity: string;
      message: string | null;
      stack_trace: string | null;
      occurred_at: string;
      product_version: string;
    };
    return {
      fingerprint: r.fingerprint as string,
      exception_type: sample.exception_type,
      count: Number(r.count),
      fatal: Number(r.fatal),
      affected_actors: Number(r.affected_actors),
      first_seen: iso(r.first_seen)!,
      last_seen: iso(r.last_seen)!,
      versions: r.versions as string[],
      sample: { ...sample, occurred_at: iso(sample.occurred_at)! },
    };
  });
}
