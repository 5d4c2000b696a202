-- Release health reads the sessions of a range's partial UTC days (and today's, and stale days') as
-- rows (src/query/reports/session-sets.ts): a few thousand sessions, whose rows the upserts of the
-- fold scatter over the heap (8,490 sessions of two days on 4,193 pages at bench:queries' 10M
-- events: 57 ms of a 190 ms statement). This index carries what that read needs, so it is an
-- index-only scan (4 ms, the pages all-visible after the rollup job's upkeep vacuums the table).
-- rm_sessions_day stays, smaller, for the bitmap scans of whole ranges (session stats).
CREATE INDEX rm_sessions_day_cover ON rm_sessions (tenant_id, day)
  INCLUDE (started_at, product_id, product_version, actor_id, status) WHERE started_at IS NOT NULL;

-- An account filter on the session reports (stats, release health, the list) read every session of
-- the range and kept the account's: 30 ms a statement over 30 days at 10M events, 2–4 ms through
-- this index (an account there has about a hundred sessions a month).
CREATE INDEX rm_sessions_account_day ON rm_sessions (tenant_id, account_id, day) WHERE started_at IS NOT NULL;
