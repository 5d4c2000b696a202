// The report and behaviour pages (issues 15 and 16). Each is one endpoint with the shared
// filter grammar (range, interval, product, breakdown, compare) read from the URL; on a server
// without the endpoint the page says so (404 → "not available on this server yet").
import { useState } from 'preact/hooks';
import { api, withQuery, type Query } from '../api';
import { useQuery } from '../data';
import { setParam } from '../route';
import { Select, Show, TextFilter } from '../ui';
import type { PageDef } from './index';
import { ProductPicker, type PageProps } from './common';
import { Result, rowsOf, toCsv } from './result';

type Control = 'interval' | 'breakdown' | 'compare' | 'view' | 'event' | 'live';
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
  breakdowns?: [string, string][];
}

const RANGE: [string, string][] = [
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'],
  ['month', 'This month'],
];
const BREAKDOWNS: [string, string][] = [
  ['', 'No breakdown'],
  ...['category', 'name', 'version', 'account', 'license', 'os', 'browser'].map((b): [string, string] => [b, b]),
];
// A funnel breaks down by a field of its first step (docs/behaviour.md).
const FUNNEL_BREAKDOWNS: [string, string][] = [
  ['', 'No breakdown'],
  ['product_version', 'version'],
  ['account_id', 'account'],
  ['license_id', 'license'],
];
const PERIODS = new Set(['day', 'week', 'month']);
/** The filters a POST body carries, from the URL (empty ones left out). */
const bodyFilters = (p: URLSearchParams) => ({ range: p.get('range') ?? '30d', ...(p.get('product') ? { product: p.get('product') } : {}) });

/** Funnel steps in the URL: steps=category:name,category:name */
export const stepsOf = (p: URLSearchParams) =>
  (p.get('steps') ?? 'app:started')
    .split(',')
    .filter(Boolean)
    .map((s) => {
      const [category = '', name = ''] = s.split(':');
      return { category, name };
    });

const DEFS: Report[] = [
  { id: 'trends', title: 'Trends', path: '/v1/reports/trends', controls: ['interval', 'breakdown', 'compare', 'view', 'event'] },
  { id: 'active', title: 'Active actors', path: '/v1/reports/active-actors', controls: ['interval', 'view'] },
  {
    id: 'funnels',
    title: 'Funnels',
    path: '/v1/funnels',
    controls: ['breakdown', 'view'],
    breakdowns: FUNNEL_BREAKDOWNS,
    missing: (p) => (stepsOf(p).length < 2 ? 'Add at least two steps (category and name) to build a funnel.' : undefined),
    post: (p) => ({ ...bodyFilters(p), steps: stepsOf(p), ...(p.get('breakdown') ? { breakdown: p.get('breakdown') } : {}) }),
  },
  {
    id: 'retention',
    title: 'Retention',
    path: '/v1/retention',
    controls: ['interval'],
    post: (p) => ({ ...bodyFilters(p), ...(PERIODS.has(p.get('interval') ?? '') ? { period: p.get('interval') } : {}) }),
  },
  {
    id: 'paths',
    title: 'Paths',
    path: '/v1/paths',
    controls: ['event'],
    missing: (p) => (!p.get('category') || !p.get('name') ? 'Pick an event (category and name) to see what comes after it.' : undefined),
  },
  { id: 'segments', title: 'Segments', path: '/v1/segments', controls: [], plain: true },
  { id: 'sessions', title: 'Sessions', path: '/v1/sessions/stats', controls: ['interval'] },
  { id: 'release-health', title: 'Release health', path: '/v1/sessions/release-health', controls: [] },
  { id: 'environment', title: 'Environment', path: '/v1/environment/os', controls: [] },
  { id: 'events', title: 'Event explorer', path: '/v1/events', controls: ['event', 'live'] },
  { id: 'usage', title: 'Usage and plan', path: '/v1/usage', controls: [] },
];

function queryOf(r: Report, p: URLSearchParams): Query {
  if (r.plain || r.post) return {};
  const q: Query = { range: p.get('range') ?? '30d', product: p.get('product') ?? '' };
  if (r.controls.includes('interval')) q.interval = p.get('interval') ?? 'day';
  if (r.controls.includes('breakdown')) q.breakdown = p.get('breakdown') ?? '';
  if (r.controls.includes('compare') && p.get('compare')) q.compare = 'previous';
  if (r.controls.includes('event')) Object.assign(q, { category: p.get('category') ?? '', name: p.get('name') ?? '' });
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
  const download = async () => {
    const csv = await api<string>(withQuery(r.path, query), { accept: 'text/csv', ...(body ? { method: 'POST', body } : {}) }).catch(() =>
      q.state === 'ok' ? toCsv(rowsOf(q.data)) : '',
    );
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    a.download = `${r.id}.csv`;
    a.click();
  };
  return (
    <>
      <div class="filters">
        <Select label="Range" name="range" value={params.get('range') ?? '30d'} options={RANGE} />
        <ProductPicker access={access} value={params.get('product') ?? ''} all />
        {r.controls.includes('interval') && (
          <Select label="Interval" name="interval" value={params.get('interval') ?? 'day'} options={['hour', 'day', 'week', 'month'].map((i) => [i, i])} />
        )}
        {r.controls.includes('event') && <TextFilter label="Category" name="category" value={params.get('category') ?? ''} />}
        {r.controls.includes('event') && <TextFilter label="Name" name="name" value={params.get('name') ?? ''} />}
        {r.controls.includes('breakdown') && (
          <Select label="Breakdown" name="breakdown" value={params.get('breakdown') ?? ''} options={r.breakdowns ?? BREAKDOWNS} />
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
        <button type="button" onClick={() => void download()} disabled={q.state !== 'ok'}>
          Download CSV
        </button>
      </div>
      {r.id === 'funnels' && <Steps params={params} />}
      <Show q={q} what={r.title.toLowerCase()}>
        {(answer) => <Result answer={answer} view={view} title={r.title} />}
      </Show>
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

function Steps({ params }: { params: URLSearchParams }) {
  const steps = stepsOf(params);
  const [draft, setDraft] = useState('');
  const save = (next: { category: string; name: string }[]) => setParam('steps', next.map((s) => `${s.category}:${s.name}`).join(','));
  return (
    <ol class="steps" aria-label="Funnel steps">
      {steps.map((s, i) => (
        <li key={i}>
          {s.category} / {s.name}{' '}
          <button type="button" disabled={steps.length <= 1} onClick={() => save(steps.filter((_, j) => j !== i))}>
            Remove step {i + 1}
          </button>
        </li>
      ))}
      <li>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const [category = '', name = ''] = draft.split(/[:/]/).map((x) => x.trim());
            if (category && name && steps.length < 10) save([...steps, { category, name }]);
            setDraft('');
          }}
        >
          <label for="new-step">Add a step (category:name)</label>{' '}
          <input id="new-step" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} placeholder="editor:file_saved" />{' '}
          <button type="submit">Add step</button>
        </form>
      </li>
    </ol>
  );
}

export const REPORTS: PageDef[] = DEFS.map((r) => ({
  id: r.id,
  title: r.title,
  group: r.id === 'usage' ? 'Manage' : 'Analyse',
  view: (props: PageProps) => <ReportPage r={r} {...props} />,
}));
