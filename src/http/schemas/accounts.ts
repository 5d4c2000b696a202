import { Type, type TSchema } from 'typebox';
import { FilterProps } from '../../query/filters.js';
import { ReportHead } from './reports.js';

// Response shapes of the account and license endpoints (SPEC.md leaves the fields "not shown";
// these are ours, documented here for OpenAPI). Counts are over the rollup window.
const When = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const Rollup = {
  refreshed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'when the rollup job last refreshed this tenant (null: not yet)',
  }),
  window_days: Type.Literal(30),
  window_start: Type.Union([Type.String({ format: 'date' }), Type.Null()], { description: 'first UTC day of the window; it ends at refreshed_at' }),
};
const Counts = {
  events: Type.Integer(),
  sessions: Type.Integer(),
  exceptions: Type.Integer(),
  active_actors: Type.Integer({ description: 'distinct actors with events in the window (exact)' }),
  products: Type.Integer(),
  first_seen: When,
  last_seen: When,
};

export const AccountRow = Type.Object({ account_id: Type.String(), ...Counts, licenses: Type.Integer() });
export const LicenseRow = Type.Object({ license_id: Type.String(), ...Counts, accounts: Type.Integer() });

export const rollupPage = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]), ...Rollup });
export const rollupList = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(item), ...Rollup });

export const ProductUsage = Type.Object({ product: Type.String(), product_id: Type.String(), events: Type.Integer(), sessions: Type.Integer() });
export const VersionUsage = Type.Object({
  source_app: Type.String({ description: 'product slug' }),
  source_version: Type.String({ description: 'product version' }),
  events: Type.Integer(),
  sessions: Type.Integer(),
});
const Counterpart = { events: Type.Integer(), active_actors: Type.Integer(), first_seen: When, last_seen: When };
export const LicenseUsage = Type.Object({ license_id: Type.String(), ...Counterpart });
export const AccountUsage = Type.Object({ account_id: Type.String(), ...Counterpart });
export const Feature = Type.Object({ category: Type.String(), name: Type.String(), events: Type.Integer(), first_seen: When, last_seen: When });
export const Actor = Type.Object({
  actor_id: Type.String(),
  events: Type.Integer(),
  first_seen: When,
  last_seen: When,
  traits: Type.Union([Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])), Type.Null()], {
    description: 'the latest traits sent with identify for this actor, or for the user an anonymous actor was linked to (null: none)',
  }),
});

export const ExceptionGroup = Type.Object({
  fingerprint: Type.String(),
  exception_type: Type.String(),
  count: Type.Integer(),
  fatal: Type.Integer({ description: 'occurrences with severity fatal' }),
  affected_actors: Type.Integer(),
  first_seen: Type.String({ format: 'date-time' }),
  last_seen: Type.String({ format: 'date-time' }),
  versions: Type.Array(Type.String()),
  sample: Type.Object(
    {
      exception_id: Type.String(),
      exception_type: Type.String(),
      severity: Type.String(),
      message: Type.Union([Type.String(), Type.Null()]),
      stack_trace: Type.Union([Type.String(), Type.Null()]),
      occurred_at: Type.String({ format: 'date-time' }),
      product_version: Type.String(),
    },
    { description: 'the latest occurrence' },
  ),
});
export const ExceptionGroups = Type.Object({
  ...ReportHead,
  data: Type.Array(ExceptionGroup),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

export const AccountOverview = Type.Object({
  account_id: Type.String(),
  ...Rollup,
  counts: Type.Object({
    events: Type.Integer(),
    sessions: Type.Integer(),
    exceptions: Type.Integer(),
    active_actors: Type.Integer(),
    licenses: Type.Integer(),
    products: Type.Integer(),
  }),
  first_seen: When,
  last_seen: When,
  products: Type.Array(ProductUsage),
  versions: Type.Array(VersionUsage),
  licenses: Type.Array(LicenseUsage),
  recent_exceptions: Type.Array(ExceptionGroup, { description: 'the five most recent exception groups of the account in the window' }),
});

export const LicenseDetail = Type.Object({
  license_id: Type.String(),
  ...Rollup,
  counts: Type.Object({
    events: Type.Integer(),
    sessions: Type.Integer(),
    exceptions: Type.Integer(),
    active_actors: Type.Integer(),
    accounts: Type.Integer(),
    products: Type.Integer(),
  }),
  first_seen: When,
  last_seen: When,
  accounts: Type.Array(AccountUsage, { description: 'observed accounts' }),
  products: Type.Array(ProductUsage),
  versions: Type.Array(VersionUsage),
  active_actors: Type.Integer(),
  recent_activity: Type.Array(
    Type.Object({ day: Type.String({ format: 'date' }), events: Type.Integer(), sessions: Type.Integer(), exceptions: Type.Integer() }),
    {
      description: 'per UTC day, newest first',
    },
  ),
});

const Share = Type.Object({
  total: Type.Integer(),
  with_account: Type.Integer(),
  with_license: Type.Integer(),
  account_pct: Type.Number(),
  license_pct: Type.Number(),
});
export const Coverage = Type.Object({
  ...Rollup,
  events: Share,
  sessions: Share,
  exceptions: Share,
  top_missing_sources: Type.Array(
    Type.Object({
      product: Type.String(),
      product_version: Type.String(),
      events: Type.Integer(),
      missing_account: Type.Integer(),
      missing_license: Type.Integer(),
    }),
  ),
  warnings: Type.Array(
    Type.Object(
      { type: Type.String({ description: 'licenses_look_per_user | license_in_several_accounts | account_with_many_licenses' }), message: Type.String() },
      { additionalProperties: true },
    ),
  ),
});

export const ExceptionQuery = Type.Object({
  product: FilterProps.product,
  version: FilterProps.version,
  severity: Type.Optional(Type.Enum(['fatal', 'non_fatal'])),
  range: FilterProps.range,
  from: FilterProps.from,
  to: FilterProps.to,
  tz: FilterProps.tz,
  interval: FilterProps.interval,
  since: Type.Optional(Type.String({ format: 'date-time', description: 'on occurred_at, an instant; not with range, from or to' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'on occurred_at, exclusive; not with range, from or to' })),
  account_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'when account context is enabled' })),
  license_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'when account context is enabled' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
});
/** An account's exceptions: the list's filters, the account being the path's. */
export const AccountExceptionQuery = Type.Omit(ExceptionQuery, ['account_id']);
