-- Data rights (docs/data-rights.md): the audit of actor erasures, and each tenant's raw-event retention.

-- One row per erasure request. The actor's id is kept only until the erasure has run; the audit
-- keeps a digest of it (sha256 of tenant id and actor id), so a later request for the same actor
-- can be matched without the audit itself holding the erased person's identifier.
CREATE TABLE actor_erasures (
  id            uuid PRIMARY KEY,          -- UUIDv7
  tenant_id     uuid NOT NULL,
  actor_id      text,                      -- null once done
  actor_digest  text NOT NULL,
  status        text NOT NULL,             -- pending | done | failed
  requested_at  timestamptz NOT NULL,
  requested_by  uuid,                      -- the API key that asked
  completed_at  timestamptz,
  erased        jsonb,                     -- rows removed, per table
  error         text
);
CREATE INDEX actor_erasures_pending ON actor_erasures (requested_at) WHERE status = 'pending';
CREATE INDEX actor_erasures_tenant ON actor_erasures (tenant_id, id DESC);

-- Days of raw events kept for this tenant; null = its plan's setting, then EVENT_RETENTION_DAYS.
ALTER TABLE tenants ADD COLUMN event_retention_days integer CHECK (event_retention_days IS NULL OR event_retention_days >= 0);
