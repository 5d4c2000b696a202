import { Type, type TSchema } from 'typebox';

// Response shapes of the reports (docs/reports.md). Every answer opens with ReportHead.
export const ReportHead = {
  range: Type.Object(
    { from: Type.String({ format: 'date-time' }), to: Type.String({ format: 'date-time', description: 'exclusive' }) },
    { description: 'the resolved range' },
  ),
  tz: Type.String(),
  interval: Type.Enum(['hour', 'day', 'week', 'month']),
  refreshed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'when the rollup job last refreshed this tenant: derived data is current up to then (null: not yet)',
  }),
};
const ComparedRange = Type.Object({ from: Type.String({ format: 'date-time' }), to: Type.String({ format: 'date-time' }) });
/** An answer of one period (its fields past the head), and with compare=previous the same for the previous period under `compare`. */
const withCompared = <P extends Record<string, TSchema>>(period: P) =>
  Type.Object({
    ...ReportHead,
    ...period,
    compare: Type.Optional(
      Type.Object({ range: ComparedRange, ...period }, { description: 'with compare=previous: the same answer for the previous period of the same length' }),
    ),
  });
const Count = Type.Integer({ minimum: 0 });
const DateLabel = Type.String({ description: "the bucket's local start: YYYY-MM-DD, or YYYY-MM-DDTHH:00 for hours" });

export const TrendPoint = Type.Object({ date: DateLabel, events: Count, actors: Type.Integer({ minimum: 0, description: 'distinct actors in the bucket' }) });
export const TrendSeries = Type.Object({
  breakdown_value: Type.Union([Type.String(), Type.Null()], { description: 'null without a breakdown, for "other", and for events without the value' }),
  other: Type.Boolean({ description: 'every value past the top `limit`, summed (actors: distinct across them)' }),
  total: Type.Object({ events: Count, actors: Count }),
  data: Type.Array(TrendPoint),
});
export const TrendsAnswer = Type.Object({
  ...ReportHead,
  breakdown: Type.Union([Type.String(), Type.Null()]),
  source: Type.Enum(['read_model', 'events'], {
    description:
      'read_model: counted from the read model (no event-level filter, no breakdown but account or license, a whole-hour zone, whole-hour bounds); events: from raw events',
  }),
  series: Type.Array(TrendSeries),
  compare: Type.Optional(Type.Object({ range: ComparedRange, series: Type.Array(TrendSeries) }, { description: 'with compare=previous: the previous period' })),
});

const ActivePeriod = {
  source: Type.Enum(['read_model', 'events'], {
    description:
      "read_model: the read model's actor days (local days from their active UTC hours; any whole-hour zone); events: raw events in the time zone's own days (name, category, property or version filters, half-hour zones)",
  }),
  data: Type.Array(Type.Object({ date: DateLabel, active: Type.Integer({ description: 'distinct actors active in the interval' }) })),
  rolling: Type.Array(
    Type.Object({ date: Type.String({ format: 'date' }), dau: Count, wau: Count, mau: Count, dau_mau: Type.Number({ description: 'DAU / MAU that day' }) }),
    { description: 'per local day: distinct actors over the 1, 7 and 30 days ending that day' },
  ),
  lifecycle: Type.Array(
    Type.Object({
      date: DateLabel,
      new: Count,
      returning: Count,
      resurrecting: Count,
      dormant: Type.Integer({ minimum: 0, description: 'active in the previous interval, not in this one (PostHog plots it negative)' }),
    }),
  ),
  stickiness: Type.Object({
    dau_mau: Type.Number({ description: 'mean of the daily DAU/MAU over the range' }),
    days_active: Type.Array(Type.Object({ days: Count, actors: Count }), {
      description: 'how many actors were active on N days per week or month (per the whole range with interval=day)',
    }),
  }),
};
export const ActiveActorsAnswer = Type.Object({
  ...ReportHead,
  ...ActivePeriod,
  compare: Type.Optional(Type.Object({ range: ComparedRange, ...ActivePeriod })),
});

const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
export const SessionRow = Type.Object({
  session_id: Type.String(),
  actor_id: Nullable(Type.String({ description: 'the identified actor once identify linked it' })),
  product: Type.String(),
  product_version: Nullable(Type.String()),
  account_id: Type.Optional(
    Nullable(Type.String({ description: "as started, or adopted from the session's first event that carried one; only for keys that may see accounts" })),
  ),
  license_id: Type.Optional(Nullable(Type.String({ description: 'only for keys that may see accounts' }))),
  started_at: Type.String({ format: 'date-time' }),
  ended_at: Nullable(Type.String({ format: 'date-time' })),
  end_reason: Nullable(Type.String()),
  duration_s: Nullable(Type.Number()),
  errors: Type.Integer({ description: 'exceptions in the session' }),
  status: Type.Enum(['healthy', 'errored', 'crashed', 'abnormal', 'open']),
});
export const SessionPage = Type.Object({ ...ReportHead, data: Type.Array(SessionRow), next_cursor: Nullable(Type.String()) });
const Percent = Nullable(Type.Number({ description: 'percent, 0–100, 4 decimals; null with no sessions' }));
export const SessionStats = withCompared({
  sessions: Count,
  duration_s: Type.Object(
    { p50: Nullable(Type.Number()), p90: Nullable(Type.Number()), p99: Nullable(Type.Number()) },
    { description: 'of ended sessions, interpolated (percentile_cont)' },
  ),
  end_reasons: Type.Record(Type.String(), Count, { description: 'normal, sdk_recovery, timeout; open for sessions not ended' }),
  statuses: Type.Object({ healthy: Count, errored: Count, crashed: Count, abnormal: Count, open: Count }),
  data: Type.Array(Type.Object({ date: DateLabel, sessions: Count })),
});
export const ReleaseHealthRow = Type.Object({
  product: Type.String(),
  product_version: Type.String(),
  sessions: Count,
  actors: Count,
  crashed_sessions: Count,
  errored_sessions: Count,
  abnormal_sessions: Count,
  healthy_sessions: Count,
  crashed_actors: Count,
  crash_free_sessions: Percent,
  crash_free_actors: Percent,
  adoption: Type.Object({ sessions: Percent, actors: Percent }, { description: "the version's share of all sessions (actors) in the range" }),
});
export const ReleaseHealth = withCompared({ data: Type.Array(ReleaseHealthRow) });

const ExceptionPoint = { count: Count, fatal: Count, actors: Type.Integer({ minimum: 0, description: 'distinct affected actors' }) };
export const ExceptionTrend = withCompared({
  fingerprint: Type.String(),
  exception_type: Type.String({ description: 'of the latest occurrence' }),
  first_seen: Type.String({ format: 'date-time' }),
  last_seen: Type.String({ format: 'date-time' }),
  first_version: Type.String({ description: 'the version of the first occurrence ever (of the product, with a product filter)' }),
  last_version: Type.String({ description: 'the version of the latest occurrence' }),
  total: Type.Object(ExceptionPoint, { description: 'in the range' }),
  data: Type.Array(Type.Object({ date: DateLabel, ...ExceptionPoint })),
});

export const ExceptionOccurrence = Type.Object({
  exception_id: Type.String(),
  occurred_at: Type.String({ format: 'date-time' }),
  received_at: Type.String({ format: 'date-time' }),
  product: Type.String(),
  product_version: Type.String(),
  exception_type: Type.String(),
  severity: Type.Enum(['fatal', 'non_fatal']),
  message: Nullable(Type.String()),
  actor_id: Type.String({ description: 'as sent' }),
  identified_actor_id: Nullable(Type.String({ description: 'the user identify linked this actor to' })),
  session_id: Nullable(Type.String({ description: 'as sent, whether or not the session is known' })),
  account_id: Type.Optional(Nullable(Type.String({ description: 'only for keys that may see accounts' }))),
  license_id: Type.Optional(Nullable(Type.String({ description: 'only for keys that may see accounts' }))),
  environment: Type.Unknown({ description: "the exception's environment_context as stored (scrubbed), null when it had none" }),
});
export const ExceptionOccurrences = Type.Object({ ...ReportHead, data: Type.Array(ExceptionOccurrence), next_cursor: Nullable(Type.String()) });

export const ExplorerEvent = Type.Object({
  event_id: Type.String(),
  occurred_at: Type.String({ format: 'date-time' }),
  received_at: Type.String({ format: 'date-time' }),
  product: Type.String(),
  product_version: Type.String(),
  category: Type.String(),
  name: Type.String(),
  actor_id: Type.String({ description: 'as sent' }),
  identified_actor_id: Nullable(Type.String({ description: 'the user identify linked this actor to' })),
  session_id: Nullable(Type.String()),
  account_id: Type.Optional(Nullable(Type.String({ description: 'only for keys that may see accounts' }))),
  license_id: Type.Optional(Nullable(Type.String())),
  properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
});
export const ExplorerPage = Type.Object({
  ...ReportHead,
  data: Type.Array(ExplorerEvent),
  next_cursor: Nullable(Type.String({ description: 'null at the end' })),
});

export const VersionsReport = withCompared({
  latest_version: Nullable(Type.String({ description: "by the product's version rules (semantic version, release date, creation)" })),
  share_on_latest: Percent,
  adoption: Type.Array(Type.Object({ date: DateLabel, version: Type.String(), actors: Count }), {
    description: 'an actor counts under the version it ended each day on',
  }),
  upgrade_lag: Nullable(
    Type.Array(
      Type.Object({
        version: Type.String(),
        released_on: Nullable(Type.String({ format: 'date' })),
        accounts: Count,
        median_lag_days: Nullable(Type.Number()),
        p90_lag_days: Nullable(Type.Number()),
      }),
      { description: "days from release (release_date, else first seen) to each account's first day on the version; null for keys that may not see accounts" },
    ),
  ),
  archived_accounts: Nullable(
    Type.Array(Type.Object({ account_id: Type.String(), version: Type.String(), actors: Count, last_seen: Nullable(Type.String({ format: 'date-time' })) }), {
      description: 'accounts whose last activity in the range was on an archived version; null for keys that may not see accounts',
    }),
  ),
});
export const AccountsOverTime = withCompared({ data: Type.Array(Type.Object({ date: DateLabel, accounts: Count, licenses: Count })) });
export const EnvironmentShares = Type.Object({
  ...ReportHead,
  field: Type.String(),
  source: Type.Optional(Type.String()),
  data: Type.Array(
    Type.Object({
      value: Nullable(Type.String({ description: 'null: not sent, or "other"' })),
      other: Type.Boolean(),
      actors: Count,
      sessions: Count,
      actor_share: Type.Number({ description: 'percent of the active actors' }),
    }),
  ),
});
