-- The sessions list (GET /v1/sessions) is newest first: without an index in that order its first
-- page sorted every started session of the range (200k at 10M events: 276 ms p95 on bench:queries'
-- fixture). This one walks them in the list's order and stops at the page's end; a version or an
-- account filter is tested on the index entry (key columns after the order's, as in
-- events_by_time, migration 180), so a rare one reads from the heap only the sessions that match.
CREATE INDEX rm_sessions_by_start ON rm_sessions (tenant_id, started_at, session_id, product_version, account_id) WHERE started_at IS NOT NULL;
