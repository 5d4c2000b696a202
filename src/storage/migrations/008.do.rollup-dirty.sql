-- Tenants whose facts changed since their snapshot was last rebuilt. The rollup job folds in
-- slices, each its own transaction, and marks the tenants each slice touched; a tenant's refresh
-- clears its mark in the refresh's transaction. A crash between the two loses no refresh.
CREATE TABLE rollup_dirty (
  tenant_id  uuid PRIMARY KEY
);
