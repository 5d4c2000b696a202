-- Transactions that were still in progress at the last fold: their rows are folded once they end.
-- (Waiting for the snapshot's xmin instead would let one long transaction anywhere in the cluster
-- stall every tenant's rollups.)
ALTER TABLE rollup_state ADD COLUMN pending bigint[] NOT NULL DEFAULT '{}';
