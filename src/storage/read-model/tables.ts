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
  'rm_session_sets',
] as const;

/** Release health's session statuses (docs/reports.md), each a column of rm_session_sets. */
export const SESSION_STATUSES = ['crashed', 'errored', 'abnormal', 'healthy'] as const;

/** SQL: rm_sessions rows `r` of a group counted per status, a column each (crashed, errored, abnormal, healthy). */
export const SESSION_STATUS_COUNTS = SESSION_STATUSES.map((s) => `count(*) FILTER (WHERE r.status = '${s}') AS ${s}`).join(', ');

/** rm_actor_months' hour columns h0…h23 (bit d − 1 of hk: an event in UTC hour k of day d of the month). */
export const MONTH_HOURS = Array.from({ length: 24 }, (_, k) => `h${k}`);

/** rm_actor_months' key: a merge leaves one row per key. */
export const MONTH_KEY = ['tenant_id', 'month', 'actor_id', 'product_id', 'account_id', 'license_id'];

/** rm_actor_months' stored OR of its hour columns (migration 170): the UTC days of the month the actor was active on. */
export const MONTH_DAYS = 'days';

/** The accounts' window: WINDOW_DAYS UTC days from window_start to the refresh's day, both included (docs/accounts.md). */
export const WINDOW_DAYS = 30;

/** SQL: a date column inside the window that starts on `windowStart` (a date parameter). */
export const inWindowSql = (column: string, windowStart: string) => `${column} >= ${windowStart}::date AND ${column} < ${windowStart}::date + ${WINDOW_DAYS}`;

/**
 * rm_actor_months rows (columns `month`, `days`) with a day of events in the window: its first
 * month from the window's first day on, its last month up to its last day, months between whole.
 * SQL over four parameters, the window's first and last month and the days it keeps of each;
 * `windowMonths(windowStart)` gives their values.
 */
export const windowMonthsSql = (first: string, firstMask: string, last: string, lastMask: string) =>
  `month >= ${first}::date AND month <= ${last}::date AND ${MONTH_DAYS} & (CASE WHEN month = ${first}::date THEN ${firstMask}::int ELSE -1 END) & (CASE WHEN month = ${last}::date THEN ${lastMask}::int ELSE -1 END) <> 0`;
export function windowMonths(windowStart: string): [first: string, firstMask: number, last: string, lastMask: number] {
  // No refresh yet: the window starts on 9999-12-31 and holds nothing; its end stays in year 9999.
  const end = windowStart.startsWith('9999-12')
    ? '9999-12-31'
    : new Date(Date.parse(`${windowStart}T00:00:00Z`) + (WINDOW_DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
  const day = (d: string) => Number(d.slice(8, 10));
  // Bits from the first day's on; bits up to the last day's (bit 31, the sign: day 32, never set).
  const from = ~((1 << (day(windowStart) - 1)) - 1);
  const upTo = day(end) === 31 ? -1 : (1 << day(end)) - 1;
  return [`${windowStart.slice(0, 8)}01`, from, `${end.slice(0, 8)}01`, upTo];
}
