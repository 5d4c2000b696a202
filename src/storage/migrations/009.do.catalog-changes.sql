-- Every change to the tables behind an API key's look-up and a batch's catalog (tenants, api_keys,
-- products, product_versions) notifies channel tally_catalog. The embedded store caches those
-- reads in its one process and drops the cache on this notice, which arrives with the answer to
-- the statement (or COMMIT) that made the change, before anything is acknowledged
-- (storage/pglite.ts). A PostgreSQL server has no listener: there the reads are never cached.
CREATE FUNCTION tally_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tally_catalog', '');
  RETURN NULL;
END
$$;

-- Row triggers, so that an UPDATE matching no row (the batch write's quota stamp, most batches)
-- says nothing. A version's last_seen moves on its own and is read by no cached look-up.
CREATE TRIGGER catalog_changed AFTER INSERT OR UPDATE OR DELETE ON tenants
  FOR EACH ROW EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_changed AFTER INSERT OR UPDATE OR DELETE ON products
  FOR EACH ROW EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_changed AFTER INSERT OR DELETE OR UPDATE OF product_id, version, status ON product_versions
  FOR EACH ROW EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_truncated AFTER TRUNCATE ON tenants
  FOR EACH STATEMENT EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_truncated AFTER TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_truncated AFTER TRUNCATE ON products
  FOR EACH STATEMENT EXECUTE FUNCTION tally_catalog_changed();
CREATE TRIGGER catalog_truncated AFTER TRUNCATE ON product_versions
  FOR EACH STATEMENT EXECUTE FUNCTION tally_catalog_changed();
