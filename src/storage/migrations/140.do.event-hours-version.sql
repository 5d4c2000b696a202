-- The explorer's bounds for a version filter (docs/reports.md, "Explorer"): a version's first and
-- last hour with events, two probes instead of a walk over every hour of the range. rm_event_hours
-- gains a few hundred rows per fold; the index costs the fold nothing measurable.
CREATE INDEX rm_event_hours_version ON rm_event_hours (tenant_id, product_id, product_version, hour);
