-- identify's optional traits: the latest flat object per (tenant, identified actor), shown with
-- the actor in the accounts views. "Latest" is by identified_at, so a late retry of an older
-- identify does not undo a newer one.
CREATE TABLE actor_traits (
  tenant_id      uuid NOT NULL,
  actor_id       text NOT NULL,
  traits         jsonb NOT NULL,
  identified_at  timestamptz NOT NULL,
  received_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, actor_id)
);
