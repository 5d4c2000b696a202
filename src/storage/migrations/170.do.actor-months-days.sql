-- rm_actor_months.days: the OR of a row's 24 hour columns, the UTC days of the month the actor was
-- active on, stored. Every read of whole UTC days (active actors, trends, environment, versions and
-- retention in UTC or any zone whose local days are whole UTC days) read it as 24 columns ORed per
-- row, twice per statement: ~27 % of active actors' statement on bench:queries' 1M fixture (690 ->
-- 500 ms, docs/reports.md). Generated, so the fold, the merge and erasure write it without naming
-- it. The table is rewritten once (one row per actor and month: small beside events).
ALTER TABLE rm_actor_months ADD COLUMN days int GENERATED ALWAYS AS (h0 | h1 | h2 | h3 | h4 | h5 | h6 | h7 | h8 | h9 | h10 | h11 | h12 | h13 | h14 | h15 | h16 | h17 | h18 | h19 | h20 | h21 | h22 | h23) STORED;
