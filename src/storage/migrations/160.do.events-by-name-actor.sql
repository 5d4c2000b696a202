-- events_by_name carries each event's actor and id: the behaviour queries that read the events of a
-- few names (a segment's "did", the anchors of paths, a funnel's steps) read only these columns, so
-- on PostgreSQL they scan the index alone (an index-only scan over pages the visibility map marks
-- all-visible, which VACUUM sets: autovacuum, or the rollup job's maintenance) instead of every heap
-- page of the range: a tenth of a name's events per 8 kB page in the heap, ~90 in the index.
-- Inserting into it cost ~2 % more per event than the old index (1M rows, same table, bench-log in
-- docs/behaviour.md). On a large table this rebuilds the index during the migration (about 25 s per
-- 10M events on a 2-core machine), holding writes to events for that time.
DROP INDEX events_by_name;
CREATE INDEX events_by_name ON events (tenant_id, product_id, category, name, occurred_at) INCLUDE (actor_id, event_id);
