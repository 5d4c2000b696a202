-- One row per actor and UTC month (docs/reports.md, "One row per actor and month"), per product, account and
-- license as rm_actor_days: bit d - 1 of h<k> is set when the actor had an event in UTC hour k of day d of
-- the month. It gives the actor's active local days in any zone whose local midnights fall on whole UTC
-- hours with a few bit operations per row (no row per day), so the unique-actor reports read one row per
-- actor and month instead of one per actor and day. Written by the fold as insert-only deltas (exceptions
-- set no bits: not active), merged by bit_or in compaction; readers bit_or too. Days fit an int (bit 30).
CREATE TABLE rm_actor_months (
  tenant_id   uuid NOT NULL,
  month       date NOT NULL,
  actor_id    text NOT NULL,
  product_id  uuid NOT NULL,
  account_id  text NOT NULL,
  license_id  text NOT NULL,
  h0  int NOT NULL DEFAULT 0,
  h1  int NOT NULL DEFAULT 0,
  h2  int NOT NULL DEFAULT 0,
  h3  int NOT NULL DEFAULT 0,
  h4  int NOT NULL DEFAULT 0,
  h5  int NOT NULL DEFAULT 0,
  h6  int NOT NULL DEFAULT 0,
  h7  int NOT NULL DEFAULT 0,
  h8  int NOT NULL DEFAULT 0,
  h9  int NOT NULL DEFAULT 0,
  h10 int NOT NULL DEFAULT 0,
  h11 int NOT NULL DEFAULT 0,
  h12 int NOT NULL DEFAULT 0,
  h13 int NOT NULL DEFAULT 0,
  h14 int NOT NULL DEFAULT 0,
  h15 int NOT NULL DEFAULT 0,
  h16 int NOT NULL DEFAULT 0,
  h17 int NOT NULL DEFAULT 0,
  h18 int NOT NULL DEFAULT 0,
  h19 int NOT NULL DEFAULT 0,
  h20 int NOT NULL DEFAULT 0,
  h21 int NOT NULL DEFAULT 0,
  h22 int NOT NULL DEFAULT 0,
  h23 int NOT NULL DEFAULT 0
);
CREATE INDEX rm_actor_months_month ON rm_actor_months (tenant_id, month);
CREATE INDEX rm_actor_months_account ON rm_actor_months (tenant_id, account_id, month) WHERE account_id <> '';
CREATE INDEX rm_actor_months_license ON rm_actor_months (tenant_id, license_id, month) WHERE license_id <> '';
CREATE INDEX rm_actor_months_actor ON rm_actor_months (tenant_id, actor_id);

-- The months of the actor days folded before this migration (their hours are exact: migration 080).
INSERT INTO rm_actor_months (tenant_id, month, actor_id, product_id, account_id, license_id, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18, h19, h20, h21, h22, h23)
SELECT tenant_id, month, actor_id, product_id, account_id, license_id,
       bit_or(bit * (hours >> 0 & 1)),
       bit_or(bit * (hours >> 1 & 1)),
       bit_or(bit * (hours >> 2 & 1)),
       bit_or(bit * (hours >> 3 & 1)),
       bit_or(bit * (hours >> 4 & 1)),
       bit_or(bit * (hours >> 5 & 1)),
       bit_or(bit * (hours >> 6 & 1)),
       bit_or(bit * (hours >> 7 & 1)),
       bit_or(bit * (hours >> 8 & 1)),
       bit_or(bit * (hours >> 9 & 1)),
       bit_or(bit * (hours >> 10 & 1)),
       bit_or(bit * (hours >> 11 & 1)),
       bit_or(bit * (hours >> 12 & 1)),
       bit_or(bit * (hours >> 13 & 1)),
       bit_or(bit * (hours >> 14 & 1)),
       bit_or(bit * (hours >> 15 & 1)),
       bit_or(bit * (hours >> 16 & 1)),
       bit_or(bit * (hours >> 17 & 1)),
       bit_or(bit * (hours >> 18 & 1)),
       bit_or(bit * (hours >> 19 & 1)),
       bit_or(bit * (hours >> 20 & 1)),
       bit_or(bit * (hours >> 21 & 1)),
       bit_or(bit * (hours >> 22 & 1)),
       bit_or(bit * (hours >> 23 & 1))
  FROM (SELECT tenant_id, date_trunc('month', day)::date AS month, actor_id, product_id, account_id, license_id, hours,
               1 << (extract(day FROM day)::int - 1) AS bit
          FROM rm_actor_days WHERE events > 0) d
 GROUP BY 1, 2, 3, 4, 5, 6;
