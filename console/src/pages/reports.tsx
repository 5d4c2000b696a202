// The report and behaviour pages (issues 15 and 16). Each is one endpoint with the shared
// filter grammar (range, interval, product, breakdown, compare) read from the URL; on a server
// without the endpoint the page says so (404 → "not available on this server yet").
import type { JSX } from 'preact';
import { api, withQuery, type Query } from '../api';
import { fmt, keyValues, useQuery } from '../data';
import { href, setParam } from '../route';
import { Card, Empty, Select, Show, TextFilter } from '../ui';
import type { PageDef } from './index';
import { ProductPicker, RANGES, type PageProps } from './common';
import { Result, rowsOf, toCsv } from './result';
import { Funnels } from './funnel';
import { ReleaseHealthTable } from './release-health';

type Control = 'interval' | 'breakdown' | 'top' | 'compare' | 'view' | 'event' | 'live' | 'range' | 'session';
interface Report {
  id: string;
  title: string;
  path: string;
  controls: Control[];
  /** A query sent as a POST body (funnels, retention): the body carries the filters too. */
  post?: (params: URLSearchParams) => unknown;
  /** A list with no report filters (segments). */
  plain?: boolean;
  /** What the endpoint needs before it can answer; until then the page asks for it instead. */
  missing?: (params: URLSearchParams) => string | undefined;
  /** The rows to draw, when the answer's first list is not them (trends: a series per value). */
  rows?: (answer: unknown) => Record<string, unknown>[];
  /** The intervals this report answers, the first the default (hour, day, week, month otherwise). */
  intervals?: string[];
  /** Headline numbers of the answer, shown as cards above the rows. */
  cards?: (answer: unknown) => [string, string][];
  /** The columns are data (trends: a column per breakdown value), shown exactly as sent. */
  dataColumns?: boolean;
  /** What an empty answer says, where "widen the range" does not apply. */
  empty?: string;
  /** A table of its own instead of the generic one (release health: grouped columns). */
  table?: (answer: unknown, title: string) => JSX.Element;
}

const BREAKDOWNS: [string, string][] = [
  ['', 'No breakdown'],
  ...['category', 'name', 'version', 'product', 'account', 'license', 'os', 'browser'].map((b): [string, string] => [b, b]),
];
/** How many breakdown values trends shows, the rest as one "(other)" (the API's default is 10). */
const TOPS: [string, string][] = [
  ['3', 'Top 3'],
  ['5', 'Top 5'],
  ['', 'Top 10'],
  ['25', 'Top 25'],
  ['50', 'Top 50'],
];
const PERIODS = new Set(['day', 'week', 'month']);
/** The filters a POST body carries, from the URL (empty ones left out). */
const bodyFilters = (p: URLSearchParams) => ({ range: p.get('range') ?? '30d', ...(p.get('product') ? { product: p.get('product') } : {}) });

const DEFS: Report[] = [
  {
    id: 'trends',
    title: 'Trends',
    path: '/v1/reports/trends',
    controls: ['range', 'interval', 'breakdown', 'top', 'compare', 'view', 'event'],
    rows: trendRows,
    dataColumns: true,
    cards: (a) => {
      const t = a as Trends;
      const sum = (s: TrendSeries[]) => s.reduce((n, x) => n + x.total.events, 0);
      return [['Events', fmt.format(sum(t.series))], ...(t.compare ? [['Previous period', fmt.format(sum(t.compare.series))] as [string, string]] : [])];
    },
  },
  {
    id: 'active',
    title: 'Active actors',
    path: '/v1/reports/active-actors',
    controls: ['range', 'interval', 'view'],
    intervals: ['day', 'week', 'month'],
    cards: (a) => {
      const last = (a as { rolling: { dau: number; wau: number; mau: number }[] }).rolling.at(-1);
      return last
        ? [
            ['DAU', fmt.format(last.dau)],
            ['WAU', fmt.format(last.wau)],
            ['MAU', fmt.format(last.mau)],
          ]
        : [];
    },
  },
  {
    id: 'retention',
    title: 'Retention',
    path: '/v1/retention',
    controls: ['range', 'interval'],
    intervals: ['week', 'day', 'month'],
    post: (p) => ({ ...bodyFilters(p), period: PERIODS.has(p.get('interval') ?? '') ? p.get('interval') : 'week' }),
  },
  {
    id: 'paths',
    title: 'Paths',
    path: '/v1/paths',
    controls: ['range', 'event'],
    rows: (a) =>
      (a as { paths: { events: { category: string; name: string }[]; occurrences: number; actors: number }[] }).paths.map((p) => ({
        path: p.events.map((e) => `${e.category}/${e.name}`).join(' → ') || '(nothing after)',
        occurrences: p.occurrences,
        actors: p.actors,
      })),
    missing: (p) => (!p.get('category') || !p.get('name') ? 'Pick an event (category and name) to see what comes after it.' : undefined),
  },
  {
    id: 'segments',
    title: 'Segments',
    path: '/v1/segments',
    controls: [],
    plain: true,
    empty: 'No segments yet. Save one with “Save as segment” from a funnel’s or retention’s drill-down, or define one with POST /v1/segments.',
  },
  {
    id: 'sessions',
    title: 'Sessions',
    path: '/v1/sessions/stats',
    controls: ['range', 'interval', 'view'],
    cards: (a) => {
      const s = a as { sessions: number; duration_s: { p50: number | null; p90: number | null }; statuses: Record<string, number> };
      return [
        ['Sessions', fmt.format(s.sessions)],
        ['Crashed', fmt.format(s.statuses.crashed ?? 0)],
        ['Duration p50', s.duration_s.p50 === null ? '—' : `${fmt.format(Math.round(s.duration_s.p50))} s`],
        ['Duration p90', s.duration_s.p90 === null ? '—' : `${fmt.format(Math.round(s.duration_s.p90))} s`],
      ];
    },
  },
  {
    id: 'release-health',
    title: 'Release health',
    path: '/v1/sessions/release-health',
    controls: ['range'],
    table: (answer, title) => <ReleaseHealthTable answer={answer} title={title} />,
  },
  { id: 'environment', title: 'Environment', path: '/v1/environment/os', controls: ['range'], rows: environmentRows },
  { id: 'events', title: 'Event explorer', path: '/v1/events', controls: ['range', 'event', 'session', 'live'], rows: eventRows },
];

interface Environment {
  field: string;
  data: { value: string | null; other: boolean; actors: number; sessions: number; actor_share: number | null }[];
}
/** Environment: the value (the rest past the top values as "(other)", actors who sent none as "(not sent)"), actors, sessions, share. */
function environmentRows(answer: unknown): Record<string, unknown>[] {
  const e = answer as Environment;
  const field = e.field === 'os' ? 'operating_system' : e.field;
  return e.data.map((r) => ({ [field]: r.other ? '(other)' : (r.value ?? '(not sent)'), actors: r.actors, sessions: r.sessions, actor_share: r.actor_share }));
}

interface ExplorerEvent {
  event_id: string;
  occurred_at: string;
  product: string;
  product_version: string;
  category: string;
  name: string;
  actor_id: string;
  identified_actor_id: string | null;
  session_id: string | null;
  properties: unknown;
  account_id?: string | null;
  license_id?: string | null;
}
/**
 * The explorer: one short column per question (when, what, which version, who), then the
 * session, account, license and properties when an event of the page has them, the event id
 * last. A session links to its events; when the server received the event is in the CSV.
 */
function eventRows(answer: unknown): Record<string, unknown>[] {
  const params = Object.fromEntries(new URLSearchParams(location.hash.split('?')[1] ?? ''));
  const events = (answer as { data: ExplorerEvent[] }).data;
  const any = (f: (e: ExplorerEvent) => unknown) => events.some((e) => f(e) !== null && f(e) !== undefined);
  const [sessions, accounts, licenses, properties] = [any((e) => e.session_id), any((e) => e.account_id), any((e) => e.license_id), any((e) => e.properties)];
  return events.map((e) => ({
    'time (UTC)': e.occurred_at.replace('T', ' ').slice(0, 19),
    event: `${e.category}/${e.name}`,
    version: `${e.product} ${e.product_version}`,
    actor: e.identified_actor_id ? `${e.identified_actor_id} (${e.actor_id})` : e.actor_id,
    ...(sessions
      ? {
          session:
            e.session_id === null ? null : (
              <a href={href('events', { ...params, session_id: e.session_id })} data-value={e.session_id} aria-label={`Events of session ${e.session_id}`}>
                {e.session_id.slice(0, 8)}
              </a>
            ),
        }
      : {}),
    ...(accounts ? { account: e.account_id } : {}),
    ...(licenses ? { license: e.license_id } : {}),
    ...(properties ? { properties: keyValues(e.properties) } : {}),
    event_id: e.event_id,
  }));
}

interface TrendSeries {
  breakdown_value: string | null;
  other: boolean;
  total: { events: number; actors: number };
  data: { date: string; events: number; actors: number }[];
}
interface Trends {
  series: TrendSeries[];
  compare?: { series: TrendSeries[] };
}
/** Trends: one row per bucket, a column of events per series (breakdown value); the previous period's by position. */
function trendRows(answer: unknown): Record<string, unknown>[] {
  const t = answer as Trends;
  // The rest past the top values is "(other)", as no value sent is "(none)": never mistaken for a value named "other".
  const name = (s: TrendSeries) => (s.other ? '(other)' : s.breakdown_value === null ? (t.series.length > 1 ? '(none)' : 'events') : s.breakdown_value);
  const dates = t.series[0]?.data.map((d) => d.date) ?? [];
  return dates.map((date, i) => {
    const row: Record<string, unknown> = { date };
    for (const s of t.series) row[name(s)] = s.data[i]?.events ?? 0;
    if (t.series.length === 1) row.actors = t.series[0]!.data[i]?.actors ?? 0;
    for (const s of t.compare?.series ?? []) row[`previous ${name(s)}`] = s.data[i]?.events ?? 0;
    return row;
  });
}

function queryOf(r: Report, p: URLSearchParams): Query {
  if (r.plain || r.post) return {};
  const q: Query = { range: p.get('range') ?? '30d', product: p.get('product') ?? '' };
  if (!r.controls.includes('range')) delete q.range;
  if (r.controls.includes('interval')) q.interval = p.get('interval') ?? r.intervals?.[0] ?? 'day';
  if (r.controls.includes('breakdown')) q.breakdown = p.get('breakdown') ?? '';
  if (r.controls.includes('top') && q.breakdown) q.limit = p.get('limit') ?? '';
  if (r.controls.includes('compare') && p.get('compare')) q.compare = 'previous';
  if (r.controls.includes('event')) Object.assign(q, { category: p.get('category') ?? '', name: p.get('name') ?? '' });
  if (r.controls.includes('session')) q.session_id = p.get('session_id') ?? '';
  return q;
}

function ReportPage({ r, access, params }: PageProps & { r: Report }) {
  const query = queryOf(r, params);
  const body = r.post?.(params);
  const live = r.controls.includes('live') && params.get('live') === '1';
  const missing = r.missing?.(params);
  const q = useQuery(
    JSON.stringify([r.path, query, body, missing]),
    () => (missing ? Promise.resolve({ data: [], note: missing }) : api<unknown>(r.path, body ? { method: 'POST', body } : { query })),
    live ? 5000 : undefined,
  );
  const view = params.get('view') ?? 'line';
  // Nothing to download until the answer has rows (not while a filter the report needs is missing).
  const hasRows = q.state === 'ok' && !missing && rowsOf(r.rows ? r.rows(q.data) : q.data).length > 0;
  const download = async () => {
    const csv = await api<string>(withQuery(r.path, query), { accept: 'text/csv', ...(body ? { method: 'POST', body } : {}) }).catch(() =>
      q.state === 'ok' ? toCsv(rowsOf(r.rows ? r.rows(q.data) : q.data)) : '',
    );
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    a.download = `${r.id}.csv`;
    a.click();
  };
  return (
    <>
      <div class="filters">
        {r.controls.includes('range') && <Select label="Range" name="range" value={params.get('range') ?? '30d'} options={RANGES} />}
        {!r.plain && <ProductPicker access={access} value={params.get('product') ?? ''} all />}
        {r.controls.includes('interval') && (
          <Select
            label="Interval"
            name="interval"
            value={params.get('interval') ?? r.intervals?.[0] ?? 'day'}
            options={(r.intervals ?? ['hour', 'day', 'week', 'month']).map((i) => [i, i])}
          />
        )}
        {r.controls.includes('event') && <TextFilter label="Category" name="category" value={params.get('category') ?? ''} />}
        {r.controls.includes('event') && <TextFilter label="Name" name="name" value={params.get('name') ?? ''} />}
        {r.controls.includes('session') && <TextFilter label="Session" name="session_id" value={params.get('session_id') ?? ''} />}
        {r.controls.includes('breakdown') && <Select label="Breakdown" name="breakdown" value={params.get('breakdown') ?? ''} options={BREAKDOWNS} />}
        {r.controls.includes('top') && params.get('breakdown') && (
          <Select label="Breakdown values" name="limit" value={params.get('limit') ?? ''} options={TOPS} />
        )}
        {r.controls.includes('compare') && <Check label="Compare to previous period" name="compare" on={!!params.get('compare')} />}
        {r.controls.includes('live') && <Check label="Live refresh (5 s)" name="live" on={live} />}
        {r.controls.includes('view') && (
          <Select
            label="Show as"
            name="view"
            value={view}
            options={[
              ['line', 'Line'],
              ['bar', 'Bar'],
              ['table', 'Table'],
            ]}
          />
        )}
        <button type="button" onClick={() => void download()} disabled={!hasRows}>
          Download CSV
        </button>
      </div>
      {missing ? (
        <Empty title={missing}>
          <p>Type them in the filters above, as the Event explorer shows them.</p>
        </Empty>
      ) : (
        <Show q={q} what={r.title.toLowerCase()}>
          {(answer) => (
            <div data-report-ready="true">
              {r.cards && (
                <div class="cards">
                  {r.cards(answer).map(([label, value]) => (
                    <Card key={label} id={label.toLowerCase().replace(/\W+/g, '-')} label={label} value={value} />
                  ))}
                </div>
              )}
              {r.table ? (
                r.table(answer, r.title)
              ) : (
                <Result answer={r.rows ? r.rows(answer) : answer} view={view} title={r.title} dataColumns={r.dataColumns} empty={r.empty} />
              )}
            </div>
          )}
        </Show>
      )}
    </>
  );
}

function Check({ label, name, on }: { label: string; name: string; on: boolean }) {
  return (
    <label class="field check">
      <input type="checkbox" checked={on} onChange={(e) => setParam(name, e.currentTarget.checked ? '1' : undefined)} /> {label}
    </label>
  );
}

const page = (id: string): PageDef => {
  const r = DEFS.find((d) => d.id === id)!;
  return { id: r.id, title: r.title, group: 'Analyse', view: (props: PageProps) => <ReportPage r={r} {...props} /> };
};

export const REPORTS: PageDef[] = [
  page('trends'),
  page('active'),
  { id: 'funnels', title: 'Funnels', group: 'Analyse', view: Funnels },
  ...['retention', 'paths', 'segments', 'sessions', 'release-health', 'environment', 'events'].map(page),
];
