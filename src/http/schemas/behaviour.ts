import { Type, type TSchema } from 'typebox';

// Request and response shapes of the behaviour queries (funnels, retention, drill-down). Bodies
// are closed objects: an unknown field is a 400 naming it, like an unknown query parameter.

const Name = Type.String({ minLength: 1, maxLength: 256 });

/** The scope every query takes (src/query/scope.ts resolves it). */
export const ScopeFields = {
  product: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'product id or slug; unknown: an empty answer' })),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'a product_version, or `latest` (needs product)' })),
  range: Type.Optional(
    Type.String({ maxLength: 16, description: '`Nd` (the N local days ending today, 1–730), `24h` or `month`; default 30d; not with from/to' }),
  ),
  from: Type.Optional(
    Type.String({ maxLength: 40, description: 'ISO 8601; a bare date is local midnight in tz, a date-time without an offset is wall time in tz' }),
  ),
  to: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601, exclusive, read as from is; default now' })),
  tz: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, default UTC' })),
  interval: Type.Optional(Type.Enum(['hour', 'day', 'week', 'month'], { description: 'periods of the trends (default day); weeks start on Monday' })),
  account_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 256, description: 'only this account’s events (Business, Enterprise, Trial; account context on)' }),
  ),
  license_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'only this license’s events (as account_id)' })),
};
const SegmentId = Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'only the actors of this saved segment (count_by actor)' }));
const SaveAs = Type.Optional(
  Type.Object(
    { name: Type.String({ minLength: 1, maxLength: 200 }), description: Type.Optional(Type.String({ maxLength: 2000 })) },
    { additionalProperties: false, description: 'save the whole list as a static segment (actors only); the answer names it in segment_id' },
  ),
);

export const PropertyFilter = Type.Record(
  Type.String({ minLength: 1, maxLength: 128 }),
  Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Boolean()]),
  {
    maxProperties: 10,
    description: 'property equality: every key must equal its value in the event’s properties',
  },
);

export const EventMatcher = Type.Object(
  { category: Name, name: Name, properties: Type.Optional(PropertyFilter) },
  { additionalProperties: false, description: 'an event by (category, name), optionally with property equality filters' },
);

export const Exclusion = Type.Object(
  {
    category: Name,
    name: Name,
    properties: Type.Optional(PropertyFilter),
    from_step: Type.Integer({ minimum: 1, maximum: 9, description: '1-based: the exclusion counts after this step is reached…' }),
    to_step: Type.Integer({ minimum: 2, maximum: 10, description: '…and before this one is' }),
  },
  { additionalProperties: false },
);

const FunnelFields = {
  ...ScopeFields,
  steps: Type.Array(EventMatcher, { minItems: 2, maxItems: 10 }),
  order: Type.Optional(
    Type.Enum(['ordered', 'strict', 'unordered'], {
      description: 'ordered (default): other events may come between; strict: nothing of the unit between two steps; unordered: the steps in any order',
    }),
  ),
  window: Type.Optional(
    Type.Object(
      { value: Type.Integer({ minimum: 1, maximum: 1000 }), unit: Type.Enum(['minute', 'hour', 'day', 'week']) },
      { additionalProperties: false, description: 'conversion window from the entry (step 1), inclusive; default 14 days; at most 90 days' },
    ),
  ),
  exclusions: Type.Optional(
    Type.Array(Exclusion, { maxItems: 5, description: 'an exclusion event between two steps drops that attempt; a unit with no other attempt is not counted' }),
  ),
  count_by: Type.Optional(
    Type.Enum(['actor', 'session', 'account'], { description: 'actor (default, identity links applied), session, or account (account plans)' }),
  ),
  segment_id: SegmentId,
  breakdown: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 140,
      description: 'product_version, account_id, license_id or properties.<key>, taken from the entry event (first touch); the 25 largest values',
    }),
  ),
};
export const FunnelQuery = Type.Object(FunnelFields, { additionalProperties: false });

export const FunnelActorsQuery = Type.Object(
  {
    ...FunnelFields,
    step: Type.Integer({ minimum: 1, maximum: 10, description: '1-based step' }),
    status: Type.Optional(
      Type.Enum(['reached', 'dropped'], { description: 'reached (default): got to the step; dropped: reached the step before and not this one' }),
    ),
    save_as_segment: SaveAs,
    breakdown_value: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()], { description: 'only units of this breakdown value' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
);

const Seconds = Type.Union([Type.Number(), Type.Null()]);
export const FunnelStep = Type.Object({
  step: Type.Integer(),
  category: Type.String(),
  name: Type.String(),
  count: Type.Integer(),
  conversion_from_first: Type.Number({ description: 'count / step 1 count (0–1)' }),
  conversion_from_previous: Type.Number({ description: 'count / previous step count (0–1)' }),
  dropped: Type.Integer({ description: 'previous step count − count' }),
  drop_off: Type.Number({ description: 'dropped / previous step count (0–1)' }),
  median_seconds: Seconds,
  average_seconds: Seconds,
});

const Echo = {
  range: Type.Object({ from: Type.String({ format: 'date-time' }), to: Type.String({ format: 'date-time' }) }),
  tz: Type.String(),
  interval: Type.String(),
  refreshed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'raw events: the time of the answer; the read model (retention, dynamic segments): the last fold (null: none yet)',
  }),
};

export const FunnelResult = Type.Object({
  ...Echo,
  order: Type.String(),
  count_by: Type.String(),
  window: Type.Object({ value: Type.Integer(), unit: Type.String() }),
  steps: Type.Array(FunnelStep),
  entered: Type.Integer(),
  converted: Type.Integer(),
  conversion_rate: Type.Number(),
  time_to_convert: Type.Object({
    median_seconds: Seconds,
    average_seconds: Seconds,
    histogram: Type.Array(Type.Object({ from_seconds: Type.Number(), to_seconds: Type.Number(), count: Type.Integer() })),
  }),
  trends: Type.Array(
    Type.Object({ period_start: Type.String({ format: 'date-time' }), entered: Type.Integer(), converted: Type.Integer(), conversion_rate: Type.Number() }),
  ),
  breakdown: Type.Union([Type.Array(Type.Object({ value: Type.Union([Type.String(), Type.Null()]), steps: Type.Array(FunnelStep) })), Type.Null()]),
});

export const UnitRow = Type.Object({ id: Type.String({ description: 'the actor, session or account id' }) });
export const unitPage = <T extends TSchema>(item: T) =>
  Type.Object({
    count_by: Type.String(),
    segment_id: Type.Optional(Type.String({ description: 'the static segment saved from this list (save_as_segment)' })),
    data: Type.Array(item),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
    ...Echo,
  });

const RetentionFields = {
  ...ScopeFields,
  start_event: Type.Optional(EventMatcher),
  return_event: Type.Optional(EventMatcher),
  period: Type.Optional(Type.Enum(['day', 'week', 'month'], { description: 'cohort and return period, cut in tz (weeks start on Monday); default week' })),
  periods: Type.Optional(Type.Integer({ minimum: 1, maximum: 90, default: 8, description: 'N: return periods after the cohort’s own' })),
  type: Type.Optional(
    Type.Enum(['first_time', 'recurring'], {
      description: 'first_time (default): the cohort of a unit’s first start event ever; recurring: every period with a start event',
    }),
  ),
  count_by: Type.Optional(Type.Enum(['actor', 'account'], { description: 'actor (default, identity links applied) or account (account plans)' })),
  segment_id: SegmentId,
};
export const RetentionQuery = Type.Object(RetentionFields, { additionalProperties: false, description: 'start and return events default to any event' });

export const RetentionActorsQuery = Type.Object(
  {
    ...RetentionFields,
    cohort: Type.Integer({ minimum: 0, maximum: 119, description: '0-based index into the answer’s cohorts' }),
    cohort_period: Type.Integer({ minimum: 0, maximum: 90, description: 'k: 0 is the cohort itself' }),
    save_as_segment: SaveAs,
    criteria: Type.Optional(Type.Enum(['on', 'on_or_after'], { description: 'on (default): returned in period k; on_or_after: in k or later' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
);

export const RetentionResult = Type.Object({
  ...Echo,
  period: Type.String(),
  periods: Type.Integer(),
  type: Type.String(),
  count_by: Type.String(),
  cohorts: Type.Array(
    Type.Object({
      cohort_start: Type.String({ format: 'date-time' }),
      size: Type.Integer(),
      values: Type.Array(
        Type.Object({
          period: Type.Integer(),
          count: Type.Integer({ description: 'returned in period k (the cohort size at k = 0)' }),
          percentage: Type.Number({ description: 'count / size (0–1)' }),
          count_on_or_after: Type.Integer({ description: 'returned in period k or later (unbounded retention)' }),
          percentage_on_or_after: Type.Number(),
        }),
        { description: 'k = 0 … N; periods that have not started yet are left out' },
      ),
    }),
  ),
});

export const SegmentDefinition = Type.Object(
  {
    // A segment is a set of actors over its range: it has no buckets, so no interval (it would be ignored).
    ...(({ interval: _interval, ...fields }) => fields)(ScopeFields),
    did: Type.Optional(
      Type.Array(
        Type.Object(
          {
            category: Name,
            name: Name,
            properties: Type.Optional(PropertyFilter),
            min_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 5, description: 'did (category, name) at least min_count times in the range; all must hold' },
      ),
    ),
    first_seen_in_range: Type.Optional(
      Type.Boolean({ description: 'the actor’s first event ever falls in the range (read model: current as of the last fold)' }),
    ),
    on_version: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'had an event on this product_version in the range' })),
  },
  { additionalProperties: false, description: 'actors with an event in the scope and range (default 30d, re-evaluated at each use) who meet every condition' },
);
export const SegmentCreate = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), description: Type.Optional(Type.String({ maxLength: 2000 })), definition: SegmentDefinition },
  { additionalProperties: false },
);
export const SegmentUpdate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    definition: Type.Optional(SegmentDefinition),
  },
  { additionalProperties: false, minProperties: 1 },
);
export const Segment = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  definition: Type.Record(Type.String(), Type.Unknown()),
  static: Type.Boolean({ description: 'a saved list of actors (from a drill-down) rather than a definition' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
const SegmentEcho = {
  segment_id: Type.String(),
  range: Type.Union([Type.Object({ from: Type.String({ format: 'date-time' }), to: Type.String({ format: 'date-time' }) }), Type.Null()], {
    description: 'null for a static segment',
  }),
  tz: Type.Union([Type.String(), Type.Null()]),
  refreshed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'raw events: the time of the answer; the read model: the last fold (null: none yet)',
  }),
};
export const SegmentSize = Type.Object({ ...SegmentEcho, size: Type.Integer() });
export const SegmentActors = Type.Object({ ...SegmentEcho, data: Type.Array(UnitRow), next_cursor: Type.Union([Type.String(), Type.Null()]) });

export const PathsQuery = Type.Object({
  ...ScopeFields,
  category: Name,
  name: Name,
  direction: Type.Optional(
    Type.Enum(['next', 'previous'], { description: 'next (default): the events after it; previous: the events before it (nearest first)' }),
  ),
  steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 3, description: 'K: events per path' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'N: the most common paths' })),
  segment_id: SegmentId,
});
const Ev = Type.Object({ category: Type.String(), name: Type.String() });
export const PathsResult = Type.Object({
  ...Echo,
  event: Ev,
  direction: Type.String(),
  steps: Type.Integer(),
  occurrences: Type.Integer({ description: 'occurrences of the event in the range (every path counted)' }),
  paths: Type.Array(
    Type.Object({
      events: Type.Array(Ev, { description: 'up to K events; fewer when the actor did nothing more in the range' }),
      occurrences: Type.Integer(),
      actors: Type.Integer({ description: 'distinct actors with this path' }),
    }),
  ),
});
