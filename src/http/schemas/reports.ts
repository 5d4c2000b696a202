import { Type, type TSchema } from 'typebox';

// Response shapes of the reports (docs/reports.md). Every answer opens with ReportHead.
export const ReportHead = {
  range: Type.Object({ from: Type.String({ format: 'date-time' }), to: Type.String({ format: 'date-time', description: 'exclusive' }) }, { description: 'the resolved range' }),
  tz: Type.String(),
  interval: Type.Enum(['hour', 'day', 'week', 'month']),
  refreshed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the rollup job last refreshed this tenant: derived data is current up to then (null: not yet)' }),
};
const ComparedRange = Type.Object({ from: Type.String({ format: 'date-time' }), to: Type.String({ format: 'date-time' }) });
const Count = Type.Integer({ minimum: 0 });
const DateLabel = Type.String({ description: 'the bucket\'s local start: YYYY-MM-DD, or YYYY-MM-DDTHH:00 for hours' });

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
  series: Type.Array(TrendSeries),
  compare: Type.Optional(Type.Object({ range: ComparedRange, series: Type.Array(TrendSeries) }, { description: 'with compare=previous: the previous period' })),
});

const ActivePeriod = {
  source: Type.Enum(['read_model', 'events'], { description: 'read_model: UTC actor days; events: raw events in the time zone\'s own days (other zones, name, category, property or version filters)' }),
  data: Type.Array(Type.Object({ date: DateLabel, active: Type.Integer({ description: 'distinct actors active in the interval' }) })),
  rolling: Type.Array(
    Type.Object({ date: Type.String({ format: 'date' }), dau: Count, wau: Count, mau: Count, dau_mau: Type.Number({ description: 'DAU / MAU that day' }) }),
    { description: 'per local day: distinct actors over the 1, 7 and 30 days ending that day' },
  ),
  lifecycle: Type.Array(
    Type.Object({ date: DateLabel, new: Count, returning: Count, resurrecting: Count, dormant: Type.Integer({ minimum: 0, description: 'active in the previous interval, not in this one (PostHog plots it negative)' }) }),
  ),
  stickiness: Type.Object({
    dau_mau: Type.Number({ description: 'mean of the daily DAU/MAU over the range' }),
    days_active: Type.Array(Type.Object({ days: Count, actors: Count }), { description: 'how many actors were active on N days per week or month (per the whole range with interval=day)' }),
  }),
};
export const ActiveActorsAnswer = Type.Object({
  ...ReportHead,
  ...ActivePeriod,
  compare: Type.Optional(Type.Object({ range: ComparedRange, ...ActivePeriod })),
});

export const withHead = <T extends TSchema>(item: T) => Type.Object({ ...ReportHead, data: Type.Array(item) });
