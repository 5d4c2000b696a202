-- When a tenant's usage first reached its allotment in a billing cycle: the start of the grace
-- period for cap plans. Read with the API key on every request, so a 402 costs no extra query.
ALTER TABLE tenants ADD COLUMN quota_exhausted_at timestamptz;
ALTER TABLE tenants ADD COLUMN quota_period_start timestamptz;
