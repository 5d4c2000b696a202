-- Tenants, their API keys, products and versions, events, dead letters, usage counters.

CREATE TABLE tenants (
  id                       uuid PRIMARY KEY,
  name                     text NOT NULL,
  plan                     text NOT NULL,
  account_context_enabled  boolean NOT NULL,
  subscription_status      text NOT NULL DEFAULT 'active',   -- active | cancelled
  cancelled_at             timestamptz,
  trial_ends_at            timestamptz,
  cycle_anchor             timestamptz NOT NULL,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name         text NOT NULL,
  prefix       text NOT NULL,            -- the readable start of the key, for operators
  key_hash     text NOT NULL UNIQUE,     -- sha256 of the whole key; the key itself is never stored
  permissions  text[] NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE products (
  id                       uuid PRIMARY KEY,
  tenant_id                uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  slug                     text NOT NULL,
  name                     text NOT NULL,
  status                   text NOT NULL DEFAULT 'active',  -- active | deleting
  strict_versions_enabled  boolean NOT NULL DEFAULT false,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, slug)
);

CREATE TABLE product_versions (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL,
  product_id    uuid NOT NULL REFERENCES products(id) ON DELETE CASCADE,
  version       text NOT NULL,
  status        text NOT NULL DEFAULT 'active',   -- active | archived
  release_date  date,
  source        text NOT NULL,                     -- registered | auto
  created_at    timestamptz NOT NULL DEFAULT now(),
  first_seen    timestamptz,
  last_seen     timestamptz,
  UNIQUE (product_id, version)
);
CREATE INDEX product_versions_tenant ON product_versions (tenant_id, product_id);

-- No foreign keys on the hot tables: they cost every insert, and product purges remove rows explicitly.
CREATE TABLE events (
  tenant_id        uuid NOT NULL,
  event_id         uuid NOT NULL,
  product_id       uuid NOT NULL,
  product_version  text NOT NULL,
  category         text NOT NULL,
  name             text NOT NULL,
  occurred_at      timestamptz NOT NULL,
  received_at      timestamptz NOT NULL,
  actor_id         text NOT NULL,
  session_id       uuid,
  account_id       text,
  license_id       text,
  properties       jsonb,
  schema_version   text,
  PRIMARY KEY (tenant_id, event_id)
);

CREATE TABLE invalid_events (
  id           uuid PRIMARY KEY,          -- UUIDv7: newest first is ORDER BY id DESC
  tenant_id    uuid NOT NULL,
  kind         text NOT NULL,             -- event | session | session_end | exception | identify
  reason       text NOT NULL,
  message      text NOT NULL,
  product      text,                      -- as sent
  payload      text NOT NULL,             -- the raw element, truncated to 8 KB
  api_key_id   uuid,
  received_at  timestamptz NOT NULL
);
CREATE INDEX invalid_events_tenant ON invalid_events (tenant_id, id DESC);

-- Accepted events per tenant and billing period, spread over a few rows so that concurrent
-- batches of one tenant do not queue on a single row lock; readers sum the shards.
CREATE TABLE usage_counters (
  tenant_id     uuid NOT NULL,
  period_start  timestamptz NOT NULL,
  shard         smallint NOT NULL,
  events        bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, period_start, shard)
);
