-- Release health from sets of actors (docs/reports.md, "Sets of actors as bitmaps"): each actor a
-- tenant has had a session from gets an ordinal, and per (UTC day, product, version) the actors
-- with a session and those with a crashed one are bit strings, bit `ordinal % 65536` of the row of
-- chunk `ordinal / 65536` (65,536 bits: TOAST compresses the zero runs), beside the day's sessions
-- by status. Built by the rollup job from rm_sessions, a day at a time, for days before today
-- (storage/read-model/session-sets.ts); a day whose sessions changed since is stale, and readers
-- read its rows instead.
CREATE TABLE rm_actor_ordinals (
  tenant_id  uuid NOT NULL,
  actor_id   text NOT NULL,
  ordinal    integer NOT NULL,
  PRIMARY KEY (tenant_id, actor_id)
);
CREATE UNIQUE INDEX rm_actor_ordinals_ordinal ON rm_actor_ordinals (tenant_id, ordinal);

CREATE TABLE rm_session_sets (
  tenant_id        uuid NOT NULL,
  day              date NOT NULL,
  product_id       uuid NOT NULL,
  product_version  text NOT NULL,
  chunk            integer NOT NULL,
  sessions         bigint NOT NULL,
  crashed          bigint NOT NULL,
  errored          bigint NOT NULL,
  abnormal         bigint NOT NULL,
  healthy          bigint NOT NULL,
  actors           varbit NOT NULL,
  crashed_actors   varbit NOT NULL,
  PRIMARY KEY (tenant_id, day, product_id, product_version, chunk)
);

-- The days whose sets are not current: every change to rm_sessions marks the UTC days of the rows
-- it touched (before and after an update), whoever makes it (the fold, an identify link, an
-- erasure, a purge), in the change's own transaction.
CREATE TABLE rm_session_days_stale (
  tenant_id  uuid NOT NULL,
  day        date NOT NULL,
  PRIMARY KEY (tenant_id, day)
);

-- One function for the four triggers: each names its transition table rm_sessions_rows (the rows
-- inserted; the rows deleted; an update's rows before and, by a second trigger, after it).
CREATE FUNCTION rm_sessions_mark_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO rm_session_days_stale (tenant_id, day) SELECT DISTINCT tenant_id, day FROM rm_sessions_rows WHERE day IS NOT NULL
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;
CREATE TRIGGER rm_sessions_stale_insert AFTER INSERT ON rm_sessions
  REFERENCING NEW TABLE AS rm_sessions_rows FOR EACH STATEMENT EXECUTE FUNCTION rm_sessions_mark_stale();
CREATE TRIGGER rm_sessions_stale_update_new AFTER UPDATE ON rm_sessions
  REFERENCING NEW TABLE AS rm_sessions_rows FOR EACH STATEMENT EXECUTE FUNCTION rm_sessions_mark_stale();
CREATE TRIGGER rm_sessions_stale_update_old AFTER UPDATE ON rm_sessions
  REFERENCING OLD TABLE AS rm_sessions_rows FOR EACH STATEMENT EXECUTE FUNCTION rm_sessions_mark_stale();
CREATE TRIGGER rm_sessions_stale_delete AFTER DELETE ON rm_sessions
  REFERENCING OLD TABLE AS rm_sessions_rows FOR EACH STATEMENT EXECUTE FUNCTION rm_sessions_mark_stale();

-- What is there already: every day stale, built by the job's next runs.
INSERT INTO rm_session_days_stale (tenant_id, day) SELECT DISTINCT tenant_id, day FROM rm_sessions WHERE day IS NOT NULL;
