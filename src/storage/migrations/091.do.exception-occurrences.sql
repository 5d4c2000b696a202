-- A group's occurrences newest first (GET /v1/exceptions/{fingerprint}/occurrences): the keyset
-- (occurred_at, exception_id) within the group, walked backwards. It starts with the columns of
-- exceptions_fingerprint, so it serves that index's lookups (the group trend's) and replaces it:
-- still one index per fingerprint on the table.
CREATE INDEX exceptions_occurrences ON exceptions (tenant_id, fingerprint, occurred_at, exception_id);
DROP INDEX exceptions_fingerprint;
