import type { FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';

// CSV on every report (`Accept: text/csv`): the answer's rows, nested objects flattened into
// dotted columns, arrays as JSON. What the JSON answer echoes (range, time zone, interval,
// refreshed_at) goes into headers. A cell that starts with = + - @ or a tab is prefixed with '
// so that a spreadsheet does not run it as a formula (OWASP's CSV injection advice).

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows are any object answer
export type Row = { [k: string]: any };

const OFFERED = ['application/json', 'text/csv', 'application/x-ndjson'];
/**
 * Whether the request's Accept prefers `type` to the other answers (RFC 9110 negotiation: q-values,
 * then the more specific range, then the header’s order); JSON for any type, no Accept, or nothing offered.
 */
export const wants = (request: FastifyRequest, type: 'text/csv' | 'application/x-ndjson') => new Negotiator(request).mediaType(OFFERED) === type;

/** A list of ids (a drill-down, a segment's actors) as a CSV attachment. */
export function sendCsv(reply: FastifyReply, name: string, body: string) {
  return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}.csv"`).send(body);
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (/^[=+\-@\t\r]/.test(s) && typeof v === 'string') s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function flatten(row: Row, prefix = '', out: Row = {}): Row {
  for (const [k, v] of Object.entries(row)) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) flatten(v as Row, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = v;
  }
  return out;
}

export const csvLine = (values: unknown[]) => values.map(cell).join(',') + '\r\n';

export function csvTable(rows: Row[], columns?: string[]): string {
  const flat = rows.map((r) => flatten(r));
  const cols = columns ?? [...new Set(flat.flatMap((r) => Object.keys(r)))];
  return csvLine(cols) + flat.map((r) => csvLine(cols.map((c) => r[c]))).join('');
}

interface Echo {
  /** null: a static segment's list, which has no range or zone. */
  range?: { from: string; to: string } | null;
  tz?: string | null;
  interval?: string;
  refreshed_at?: string | null;
  /** A paged list's cursor: as CSV, the next page's is in X-Next-Cursor (absent at the end). */
  next_cursor?: string | null;
}

/** The echo of an answer as headers, for CSV and NDJSON answers. */
export function echoHeaders(reply: FastifyReply, a: Echo, name: string, ext: string): void {
  if (a.range) reply.header('x-range-from', a.range.from).header('x-range-to', a.range.to);
  if (a.tz) reply.header('x-time-zone', a.tz);
  if (a.interval) reply.header('x-interval', a.interval);
  reply.header('x-refreshed-at', a.refreshed_at ?? 'never');
  if (a.next_cursor) reply.header('x-next-cursor', a.next_cursor);
  reply.header('content-disposition', `attachment; filename="${name}.${ext}"`);
}

/** The answer as JSON, or as CSV when asked (rows: the answer's `data` unless the report says otherwise). */
export async function answer<A extends Echo>(
  request: FastifyRequest,
  reply: FastifyReply,
  name: string,
  a: A,
  rows?: (a: A) => Row[],
): Promise<A | FastifyReply> {
  if (!wants(request, 'text/csv')) return a;
  echoHeaders(reply, a, name, 'csv');
  const body = csvTable(rows ? rows(a) : ((a as unknown as { data?: Row[] }).data ?? []));
  return reply.type('text/csv; charset=utf-8').send(body);
}

interface TrendsLike {
  series: { breakdown_value: string | null; other: boolean; data: Row[] }[];
  compare?: { series: TrendsLike['series'] };
}
/** Trends: one row per series and bucket; the previous period's rows follow with period=previous. */
export const trendRows = (a: TrendsLike): Row[] =>
  (['current', 'previous'] as const).flatMap((period) =>
    (period === 'current' ? a.series : (a.compare?.series ?? [])).flatMap((s) =>
      s.data.map((p) => ({ period, breakdown_value: s.breakdown_value, other: s.other, ...p })),
    ),
  );

interface ActiveLike {
  data: Row[];
  rolling: Row[];
  lifecycle: Row[];
}
/** Active actors: one row per date, the interval's counts and lifecycle beside the day's rolling counts. */
export function activeRows(a: ActiveLike): Row[] {
  const rows = new Map<string, Row>();
  for (const r of [...a.data, ...a.lifecycle, ...a.rolling]) rows.set(String(r.date), { ...rows.get(String(r.date)), ...r });
  return [...rows.values()].sort((x, y) => String(x.date).localeCompare(String(y.date)));
}

interface FunnelLike {
  steps: Row[];
  breakdown: { value: string | null; steps: Row[] }[] | null;
}
/** A funnel: one row per step, the whole funnel's first (`series` all), then each breakdown value's. */
export const funnelRows = (a: FunnelLike): Row[] => [
  ...a.steps.map((s) => ({ series: 'all', breakdown_value: null, ...s })),
  ...(a.breakdown ?? []).flatMap((b) => b.steps.map((s) => ({ series: 'breakdown', breakdown_value: b.value, ...s }))),
];

interface RetentionLike {
  cohorts: { cohort_start: string; size: number; values: Row[] }[];
}
/** A retention matrix in long form: one row per (cohort, period k), which a spreadsheet pivots. */
export const retentionRows = (a: RetentionLike): Row[] => a.cohorts.flatMap((c) => c.values.map((v) => ({ cohort_start: c.cohort_start, size: c.size, ...v })));

interface PathsLike {
  steps: number;
  paths: { events: { category: string; name: string }[]; occurrences: number; actors: number }[];
}
/** Paths: one row per path, its K events as step_1 … step_K (category/name; empty where the path ended). */
export const pathRows = (a: PathsLike): Row[] =>
  a.paths.map((p, i) => ({
    rank: i + 1,
    ...Object.fromEntries(Array.from({ length: a.steps }, (_, k) => [`step_${k + 1}`, p.events[k] ? `${p.events[k].category}/${p.events[k].name}` : null])),
    occurrences: p.occurrences,
    actors: p.actors,
  }));
