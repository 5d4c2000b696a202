-- The read model (docs/read-model.md). Narrow derived tables, each at the grain of a query family,
-- written by the rollup job's fold as insert-only deltas (no ON CONFLICT on the hot tables) and
-- compacted later, day by day. Readers always aggregate (sum, min, max, bool_or, count DISTINCT),
-- so a day read before or after its compaction gives the same answer. Times are the records' own;
-- '' stands for "no account" / "no license". The old wide facts are replaced.
DROP TABLE ru_event_facts, ru_actor_facts, ru_session_facts, ru_exception_facts, ru_key_days, ru_key_members;

-- Events by hour (UTC hours, so that any whole-hour time zone gets exact days) for trends and
-- breakdowns by product, version and (category, name).
CREATE TABLE rm_event_hours (
  tenant_id        uuid NOT NULL,
  hour             timestamptz NOT NULL,
  product_id       uuid NOT NULL,
  product_version  text NOT NULL,
  category         text NOT NULL,
  name             text NOT NULL,
  events           bigint NOT NULL,
  first_seen       timestamptz NOT NULL,
  last_seen        timestamptz NOT NULL
);
CREATE INDEX rm_event_hours_key ON rm_event_hours (tenant_id, hour);

-- Per (account, license, product, version) and UTC day: events (by timestamp), sessions (by
-- started_at) and exceptions (by occurred_at). Serves the account and license views, coverage,
-- and trends filtered or broken down by account or license.
CREATE TABLE rm_usage_days (
  tenant_id        uuid NOT NULL,
  day              date NOT NULL,
  account_id       text NOT NULL,
  license_id       text NOT NULL,
  product_id       uuid NOT NULL,
  product_version  text NOT NULL,
  events           bigint NOT NULL DEFAULT 0,
  sessions         bigint NOT NULL DEFAULT 0,
  exceptions       bigint NOT NULL DEFAULT 0,
  first_seen       timestamptz,
  last_seen        timestamptz
);
CREATE INDEX rm_usage_days_account ON rm_usage_days (tenant_id, account_id, day);
CREATE INDEX rm_usage_days_license ON rm_usage_days (tenant_id, license_id, day);

-- Per (account, license, category, name) and UTC day: an account's features, and event counts by
-- name under an account or license filter.
CREATE TABLE rm_feature_days (
  tenant_id   uuid NOT NULL,
  day         date NOT NULL,
  account_id  text NOT NULL,
  license_id  text NOT NULL,
  product_id  uuid NOT NULL,
  category    text NOT NULL,
  name        text NOT NULL,
  events      bigint NOT NULL,
  first_seen  timestamptz NOT NULL,
  last_seen   timestamptz NOT NULL
);
CREATE INDEX rm_feature_days_account ON rm_feature_days (tenant_id, account_id, day);

-- One row per active actor per UTC day (per product, account and license it used that day: in
-- practice one), under the identified id once identify linked it. version: the last one that day;
-- crashed: a fatal exception that day; os/runtime/locale: the environment known at the fold.
-- An actor with only exceptions that day has events = 0 (it crashed, it was not active).
CREATE TABLE rm_actor_days (
  tenant_id    uuid NOT NULL,
  day          date NOT NULL,
  actor_id     text NOT NULL,
  product_id   uuid NOT NULL,
  account_id   text NOT NULL,
  license_id   text NOT NULL,
  version      text NOT NULL,
  events       bigint NOT NULL,
  crashed      boolean NOT NULL,
  os           text,
  runtime      text,
  locale       text,
  first_seen   timestamptz NOT NULL,
  last_seen    timestamptz NOT NULL
);
CREATE INDEX rm_actor_days_day ON rm_actor_days (tenant_id, day);
CREATE INDEX rm_actor_days_account ON rm_actor_days (tenant_id, account_id, day) WHERE account_id <> '';
CREATE INDEX rm_actor_days_license ON rm_actor_days (tenant_id, license_id, day) WHERE license_id <> '';
CREATE INDEX rm_actor_days_actor ON rm_actor_days (tenant_id, actor_id);

-- First occurrences: new vs returning, lifecycle, first-time retention. Written only when earlier.
CREATE TABLE rm_actor_first (
  tenant_id   uuid NOT NULL,
  actor_id    text NOT NULL,
  product_id  uuid NOT NULL,
  first_seen  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, actor_id)
);
CREATE INDEX rm_actor_first_seen ON rm_actor_first (tenant_id, first_seen);
CREATE TABLE rm_actor_event_first (
  tenant_id   uuid NOT NULL,
  category    text NOT NULL,
  name        text NOT NULL,
  actor_id    text NOT NULL,
  product_id  uuid NOT NULL,
  first_seen  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, category, name, actor_id)
);

-- One row per session, Sentry's release-health status derived from it. A row can exist before its
-- start arrives (an exception or an event named it first): started_at is NULL until then.
CREATE TABLE rm_sessions (
  tenant_id        uuid NOT NULL,
  session_id       text NOT NULL,
  started_at       timestamptz,
  day              date,
  product_id       uuid,
  product_version  text,
  actor_id         text,
  account_id       text,
  license_id       text,
  ended_at         timestamptz,
  end_reason       text,
  errors           bigint NOT NULL DEFAULT 0,
  fatal            boolean NOT NULL DEFAULT false,
  status           text GENERATED ALWAYS AS (
                     CASE WHEN fatal THEN 'crashed'
                          WHEN end_reason IN ('timeout', 'sdk_recovery') THEN 'abnormal'
                          WHEN errors > 0 THEN 'errored'
                          WHEN ended_at IS NOT NULL THEN 'healthy'
                          ELSE 'open' END) STORED,
  PRIMARY KEY (tenant_id, session_id)
);
CREATE INDEX rm_sessions_day ON rm_sessions (tenant_id, day) WHERE started_at IS NOT NULL;
CREATE INDEX rm_sessions_actor ON rm_sessions (tenant_id, actor_id);
CREATE INDEX rm_actor_event_first_actor ON rm_actor_event_first (tenant_id, actor_id);

-- A session's end (and a server-side timeout) is an UPDATE: the fold finds it by this xid.
ALTER TABLE sessions ADD COLUMN changed_xid bigint;
CREATE INDEX sessions_changed_xid ON sessions (changed_xid) WHERE changed_xid IS NOT NULL;
-- Identify links are folded too: a late link moves the anonymous actor's derived rows.
ALTER TABLE actor_links ADD COLUMN ingest_xid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX actor_links_ingest_xid ON actor_links USING brin (ingest_xid);

-- Days whose deltas await compaction, with how many folds wrote to them since the last one.
CREATE TABLE rm_compaction_due (
  tenant_id  uuid NOT NULL,
  day        date NOT NULL,
  folds      int NOT NULL,
  slice      bigint NOT NULL,      -- the last slice that counted (its end xid): a slice counts once
  PRIMARY KEY (tenant_id, day)
);

-- What only raw events answer (funnels, drill-down, the explorer): an index per name and time.
CREATE INDEX events_by_name ON events (tenant_id, product_id, category, name, occurred_at);
