-- Narrow per-key rollups, maintained by the fold, so that a tenant's account and license
-- snapshots are rebuilt from small tables instead of the window's wide facts.
-- kind: 'a' account, 'l' license. member_kind: 'u' actor, 'l' license, 'a' account, 'p' product.
CREATE TABLE ru_key_days (
  tenant_id   uuid NOT NULL,
  kind        "char" NOT NULL,
  key         text NOT NULL,
  day         date NOT NULL,
  events      bigint NOT NULL DEFAULT 0,
  sessions    bigint NOT NULL DEFAULT 0,
  exceptions  bigint NOT NULL DEFAULT 0,
  first_seen  timestamptz,
  last_seen   timestamptz,
  PRIMARY KEY (tenant_id, kind, key, day)
);
CREATE INDEX ru_key_days_day ON ru_key_days (day);

-- A member counts in the window when its last active day is in it: exact distinct counts.
CREATE TABLE ru_key_members (
  tenant_id    uuid NOT NULL,
  kind         "char" NOT NULL,
  key          text NOT NULL,
  member_kind  "char" NOT NULL,
  member       text NOT NULL,
  last_day     date NOT NULL,
  PRIMARY KEY (tenant_id, kind, key, member_kind, member)
);
CREATE INDEX ru_key_members_last_day ON ru_key_members (last_day);

-- Account and license exception views filter by these.
CREATE INDEX exceptions_account ON exceptions (tenant_id, account_id, occurred_at) WHERE account_id IS NOT NULL;
CREATE INDEX exceptions_license ON exceptions (tenant_id, license_id, occurred_at) WHERE license_id IS NOT NULL;
