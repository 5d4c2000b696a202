-- events_by_time carries each event's version and account after its key: the event explorer's
-- first page, newest first, filtered by a version or an account, then tests those two on each
-- index entry and reads from the heap only the events that match, instead of every event of the
-- walk (a version that ran on few actors at the range's end had ~1,000 heap reads per page at 10M
-- events: docs/reports.md, "The event explorer"). They are key columns, not INCLUDE ones, because
-- PostgreSQL checks a key column's condition in the index during a plain index scan and an
-- INCLUDE column's only after the heap read. They follow (occurred_at, event_id), so the index's
-- order, and every keyset on it, stays as it was. Inserting costs no more statements per event,
-- only wider entries (bench:ingest, docs/reports.md). On a large table this rebuilds the index
-- during the migration (12 s for 10M events on a 2-core machine, with migration 190), and the
-- DROP INDEX holds every read and write of events until the migration commits.
DROP INDEX events_by_time;
CREATE INDEX events_by_time ON events (tenant_id, occurred_at, event_id, product_version, account_id);
