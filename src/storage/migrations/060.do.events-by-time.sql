-- The event explorer (GET /v1/events, newest first) and its export walk a tenant's events by time;
-- events_by_name serves it only with a product and a name. One more index on the hot table: its
-- cost shows in bench:ingest (docs/reports.md).
CREATE INDEX events_by_time ON events (tenant_id, occurred_at, event_id);
