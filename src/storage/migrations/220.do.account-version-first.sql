-- Each account's first UTC day with an event on each version of a product: the versions report's
-- upgrade lag (docs/reports.md). It read every actor day of the product to find these (all time,
-- whatever the request's range): 880 ms of 2.9M actor days at bench:queries' 10M events, on every
-- versions request; one account's versions report took 853 ms, 41 ms with this table. Kept by the
-- fold, moved only earlier (as rm_actor_event_first); an erasure recomputes the erased actor's
-- accounts from rm_usage_days.
CREATE TABLE rm_account_version_first (
  tenant_id        uuid NOT NULL,
  product_id       uuid NOT NULL,
  product_version  text NOT NULL,
  account_id       text NOT NULL,
  day              date NOT NULL,
  PRIMARY KEY (tenant_id, product_id, product_version, account_id)
);
INSERT INTO rm_account_version_first (tenant_id, product_id, product_version, account_id, day)
SELECT tenant_id, product_id, product_version, account_id, min(day)
  FROM (SELECT tenant_id, day, product_id, product_version, account_id FROM rm_usage_days
         WHERE account_id <> '' GROUP BY 1, 2, 3, 4, 5 HAVING sum(events) > 0) u
 GROUP BY 1, 2, 3, 4;
