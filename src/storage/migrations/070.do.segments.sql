-- Saved segments (docs/behaviour.md): a definition (scope, behaviour conditions) evaluated when
-- used, or a static list of actors saved from a drill-down ("save as segment").
CREATE TABLE segments (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  name         text NOT NULL,
  description  text,
  definition   jsonb NOT NULL,
  static       boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
CREATE INDEX segments_tenant ON segments (tenant_id, id);

-- The members of a static segment, as saved (identified ids when identify had linked them).
CREATE TABLE segment_members (
  tenant_id   uuid NOT NULL,
  segment_id  uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  actor_id    text NOT NULL,
  PRIMARY KEY (segment_id, actor_id)
);
