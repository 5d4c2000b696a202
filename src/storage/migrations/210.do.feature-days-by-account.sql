-- rm_feature_days without license_id: its one reader is an account's features (an account's
-- (category, name) pairs), and no view asks for a license's. Keyed by license too, it held a row per
-- (account, license) pair of a day and name: 4.15M rows for bench:queries' 10M events, 1.99M by
-- account, every one written by the fold and read by the account's features list.
CREATE TABLE rm_feature_days_by_account (LIKE rm_feature_days);
ALTER TABLE rm_feature_days_by_account DROP COLUMN license_id;
INSERT INTO rm_feature_days_by_account (tenant_id, day, account_id, product_id, category, name, events, first_seen, last_seen)
SELECT tenant_id, day, account_id, product_id, category, name, sum(events), min(first_seen), max(last_seen)
  FROM rm_feature_days GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY tenant_id, day, account_id;
DROP TABLE rm_feature_days;
ALTER TABLE rm_feature_days_by_account RENAME TO rm_feature_days;
CREATE INDEX rm_feature_days_account ON rm_feature_days (tenant_id, account_id, day);
