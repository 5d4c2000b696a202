-- Sessions, exceptions, identities, environments, allowlists.

-- A session's id is the client's identifier (a UUID when events reference it), stored as text.
CREATE TABLE sessions (
  tenant_id        uuid NOT NULL,
  session_id       text NOT NULL,
  product_id       uuid NOT NULL,
  product_version  text NOT NULL,
  actor_id         text NOT NULL,
  account_id       text,              -- captured at start, never changed afterwards
  license_id       text,
  properties       jsonb,
  started_at       timestamptz NOT NULL,
  last_seen_at     timestamptz NOT NULL, -- start, or the latest event carrying this session_id
  ended_at         timestamptz,
  end_reason       text,               -- normal | sdk_recovery | timeout
  received_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, session_id)
);
CREATE INDEX sessions_open ON sessions (last_seen_at) WHERE ended_at IS NULL;
CREATE INDEX sessions_product ON sessions (product_id);

-- An end that came before its start (the clients race): kept an hour, applied when the start comes.
CREATE TABLE pending_session_ends (
  tenant_id    uuid NOT NULL,
  session_id   text NOT NULL,
  ended_at     timestamptz NOT NULL,
  end_reason   text NOT NULL,
  received_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, session_id)
);
CREATE INDEX pending_session_ends_received ON pending_session_ends (received_at);

CREATE TABLE exceptions (
  tenant_id            uuid NOT NULL,
  exception_id         text NOT NULL,
  product_id           uuid NOT NULL,
  product_version      text NOT NULL,
  exception_type       text NOT NULL,
  severity             text NOT NULL,   -- fatal | non_fatal
  occurred_at          timestamptz NOT NULL,
  received_at          timestamptz NOT NULL,
  actor_id             text NOT NULL,
  message              text,
  stack_trace          text,
  breadcrumbs          jsonb,
  session_id           text,            -- kept even when the session is not (yet) known
  account_id           text,
  license_id           text,
  environment_context  jsonb,
  fingerprint          text NOT NULL,
  PRIMARY KEY (tenant_id, exception_id)
);
CREATE INDEX exceptions_fingerprint ON exceptions (tenant_id, fingerprint);
CREATE INDEX exceptions_product ON exceptions (product_id);

-- identify: a device's anonymous id linked to a user id, once.
CREATE TABLE actor_links (
  tenant_id            uuid NOT NULL,
  anonymous_actor_id   text NOT NULL,
  identified_actor_id  text NOT NULL,
  identified_at        timestamptz NOT NULL,
  product_id           uuid NOT NULL,
  product_version      text,
  received_at          timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, anonymous_actor_id)
);
CREATE INDEX actor_links_identified ON actor_links (tenant_id, identified_actor_id);

-- X-Environment-Data, the latest per actor and session ('' when the request had no session).
CREATE TABLE environments (
  tenant_id    uuid NOT NULL,
  actor_id     text NOT NULL,
  session_id   text NOT NULL DEFAULT '',
  data         jsonb NOT NULL,
  received_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, actor_id, session_id)
);

-- Per-product allowlists of (category, name) pairs; '*' is a wildcard.
ALTER TABLE products ADD COLUMN allowlist_enabled boolean NOT NULL DEFAULT false;
CREATE TABLE allowlist_rules (
  product_id  uuid NOT NULL REFERENCES products(id) ON DELETE CASCADE,
  category    text NOT NULL,
  name        text NOT NULL,
  PRIMARY KEY (product_id, category, name)
);
