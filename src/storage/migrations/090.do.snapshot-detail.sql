-- An account's or license's detail lists, built into its snapshot at refresh time (docs/accounts.md):
-- products, versions, the other side of the pair (licenses of an account, accounts of a license)
-- and, for a license, its activity per day. One account's or license's view then reads one row
-- instead of grouping the window's derived rows (the biggest account's overview took 157–223 ms
-- at 1M events). NULL until the tenant's next refresh; readers compute the lists live until then.
ALTER TABLE ru_accounts ADD COLUMN detail jsonb;
ALTER TABLE ru_licenses ADD COLUMN detail jsonb;

-- Every tenant's snapshot is due at the job's next run.
INSERT INTO rollup_dirty (tenant_id) SELECT tenant_id FROM tenant_rollups ON CONFLICT DO NOTHING;
