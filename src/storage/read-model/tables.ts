// The read model's derived tables that hold a product's rows (docs/read-model.md): what a product
// purge deletes along with its raw records, and what the rollup job's upkeep vacuums.
export const DERIVED_TABLES = [
  'rm_event_hours',
  'rm_usage_days',
  'rm_feature_days',
  'rm_actor_days',
  'rm_actor_months',
  'rm_actor_first',
  'rm_actor_event_first',
  'rm_account_version_first',
  'rm_sessions',
] as const;

/** rm_actor_months' hour columns h0…h23 (bit d − 1 of hk: an event in UTC hour k of day d of the month). */
export const MONTH_HOURS = Array.from({ length: 24 }, (_, k) => `h${k}`);

/** rm_actor_months' key: a merge leaves one row per key. */
export const MONTH_KEY = ['tenant_id', 'month', 'actor_id', 'product_id', 'account_id', 'license_id'];

/** rm_actor_months' stored OR of its hour columns (migration 170): the UTC days of the month the actor was active on. */
export const MONTH_DAYS = 'days';

/**
 * rm_actor_months rows (columns `month`, `days`) with a day of events on or after `windowStart` (a
 * UTC date): its month from that day on, later months whole. SQL over two parameters, `$month` the
 * window's month and `$mask` the days it keeps of it; `monthsSince(windowStart)` gives their values.
 */
export const monthsSinceSql = (month: string, mask: string) =>
  `month >= ${month}::date AND ${MONTH_DAYS} & (CASE WHEN month = ${month}::date THEN ${mask}::int ELSE -1 END) <> 0`;
export const monthsSince = (windowStart: string): [month: string, mask: number] => [
  `${windowStart.slice(0, 8)}01`,
  ~((1 << (Number(windowStart.slice(8, 10)) - 1)) - 1),
];
