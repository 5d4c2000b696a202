// The read model's derived tables that hold a product's rows (docs/read-model.md): what a product
// purge deletes along with its raw records, and what the rollup job's upkeep vacuums.
export const DERIVED_TABLES = [
  'rm_event_hours',
  'rm_usage_days',
  'rm_feature_days',
  'rm_actor_days',
  'rm_actor_first',
  'rm_actor_event_first',
  'rm_sessions',
] as const;
