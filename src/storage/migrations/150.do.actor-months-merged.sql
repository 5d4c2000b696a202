-- rm_actor_months' merge in bounded steps (docs/read-model.md, "Compaction"): a row is a delta the fold
-- (or an identify link's move) wrote, not yet merged, until a merge step rewrites its key as one merged
-- row. The step finds the keys to merge through the partial index below, a few at a time, instead of
-- reading a whole month. A key has at most one merged row; more rows mean an unmerged delta among them.
-- Rows already here count as merged (a constant default: no rewrite of the table), except those of
-- the keys that hold more than one row, which wait for a merge like a fold's deltas.
ALTER TABLE rm_actor_months ADD COLUMN merged boolean NOT NULL DEFAULT true;
ALTER TABLE rm_actor_months ALTER COLUMN merged SET DEFAULT false;
UPDATE rm_actor_months r SET merged = false
  FROM (SELECT tenant_id, month, actor_id, product_id, account_id, license_id FROM rm_actor_months
         GROUP BY 1, 2, 3, 4, 5, 6 HAVING count(*) > 1) k
 WHERE r.tenant_id = k.tenant_id AND r.month = k.month AND r.actor_id = k.actor_id
   AND r.product_id = k.product_id AND r.account_id = k.account_id AND r.license_id = k.license_id;
CREATE INDEX rm_actor_months_unmerged ON rm_actor_months (tenant_id, month, actor_id, product_id, account_id, license_id) WHERE NOT merged;
-- A merge step deletes its keys' rows by the whole key. With the table's statistics stale (a first fold
-- fills it between two ANALYZEs) the planner took (tenant_id, month) for a key and read the whole month
-- once per key: a 20,000-key step of bench:accounts' first fold ran for minutes. An index on the whole key
-- (its first two columns serve every reader of a month range as the old one did) leaves no such plan.
DROP INDEX rm_actor_months_month;
CREATE INDEX rm_actor_months_key ON rm_actor_months (tenant_id, month, actor_id, product_id, account_id, license_id);
