import type { Queryable } from './db.js';
import { exactTime, iso } from './rows.js';

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
  /** The key of the last group of the previous page: last_seen as exact text (last_seen_key), fingerprint. */
  before?: { lastSeen: string; fingerprint: string } | undefined;
  limit: number;
}

export async function exceptionGroups(q: Queryable, tenantId: string, f: ExceptionFilter) {
  // Affected actors count each actor once, resolved through identify links (CONTRACT.md: an
  // anonymous id linked to a user counts as that user), as the group's trend does.
  const rows = await q.query(
    `SELECT * FROM (
       SELECT e.fingerprint, count(*) AS count, count(DISTINCT coalesce(l.identified_actor_id, e.actor_id)) AS affected_actors,
              min(e.occurred_at) AS first_seen, max(e.occurred_at) AS last_seen, ${exactTime('max(e.occurred_at)')} AS last_seen_key,
              array_agg(DISTINCT e.product_version ORDER BY e.product_version) AS versions,
              count(*) FILTER (WHERE e.severity = 'fatal') AS fatal,
              (array_agg(json_build_object('exception_id', e.exception_id, 'exception_type', e.exception_type, 'severity', e.severity, 'message', e.message,
                         'stack_trace', e.stack_trace, 'occurred_at', e.occurred_at, 'product_version', e.product_version) ORDER BY e.occurred_at DESC))[1] AS sample
         FROM exceptions e LEFT JOIN actor_links l ON l.tenant_id = e.tenant_id AND l.anonymous_actor_id = e.actor_id
        WHERE e.tenant_id = $1 AND ($2::uuid IS NULL OR e.product_id = $2) AND ($3::text IS NULL OR e.product_version = $3)
          AND ($4::text IS NULL OR e.severity = $4) AND ($5::timestamptz IS NULL OR e.occurred_at >= $5) AND ($6::timestamptz IS NULL OR e.occurred_at < $6)
          AND ($7::text IS NULL OR e.account_id = $7) AND ($8::text IS NULL OR e.license_id = $8)
        GROUP BY e.fingerprint) g
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
      /** The cursor key: last_seen to the microsecond. */
      last_seen_key: r.last_seen_key as string,
      versions: r.versions as string[],
      sample: { ...sample, occurred_at: iso(sample.occurred_at)! },
    };
  });
}
