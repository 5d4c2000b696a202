-- Events that name a session before its start has arrived: their latest timestamp, folded into
-- the session's last sign of life when the start comes (and forgotten after the session timeout).
CREATE TABLE session_early_signs (
  tenant_id     uuid NOT NULL,
  session_id    text NOT NULL,
  last_seen_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, session_id)
);
CREATE INDEX session_early_signs_seen ON session_early_signs (last_seen_at);
