// The funnel builder: steps in the URL, the answer as steps (bars) or conversion over time (a
// line), a table per step (and per breakdown value), and a drill-down from any step to the
// actors who reached it or dropped there: paged, as CSV, or saved as a segment.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { LineChart } from '../chart';
import { fmt, pct, useQuery } from '../data';
import { href, setParam, setParams } from '../route';
import { Empty, Head, Select, Show } from '../ui';
import { ProductPicker, RANGES, type PageProps } from './common';

interface Step {
  step: number;
  category: string;
  name: string;
  count: number;
  conversion_from_first: number;
  conversion_from_previous: number;
  dropped: number;
  drop_off: number;
  median_seconds: number | null;
}
export interface FunnelAnswer {
  steps: Step[];
  entered: number;
  converted: number;
  conversion_rate: number;
  trends: { period_start: string; entered: number; converted: number; conversion_rate: number }[];
  breakdown: { value: string | null; steps: Step[] }[] | null;
}

// A funnel breaks down by a field of its first step (docs/behaviour.md).
const BREAKDOWNS: [string, string][] = [
  ['', 'No breakdown'],
  ['product_version', 'Version'],
  ['account_id', 'Account'],
  ['license_id', 'License'],
];
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];

/** Funnel steps in the URL: steps=category:name,category:name */
export const stepsOf = (p: URLSearchParams) =>
  (p.get('steps') ?? 'app:started')
    .split(',')
    .filter(Boolean)
    .map((s) => {
      const [category = '', name = ''] = s.split(':');
      return { category, name };
    });

/** The POST body of the funnel the URL describes (the drill-down adds step, status, paging). */
export function funnelBody(p: URLSearchParams) {
  return {
    range: p.get('range') ?? '30d',
    ...(p.get('product') ? { product: p.get('product') } : {}),
    ...(p.get('interval') ? { interval: p.get('interval') } : {}),
    steps: stepsOf(p),
    ...(p.get('breakdown') ? { breakdown: p.get('breakdown') } : {}),
  };
}

const label = (v: string | null) => (v === null ? '(none)' : v);

export function Funnels({ access, params }: PageProps) {
  const body = funnelBody(params);
  const ready = body.steps.length >= 2;
  const q = useQuery(ready ? JSON.stringify(body) : 'funnel:none', () =>
    ready ? api<FunnelAnswer>('/v1/funnels', { method: 'POST', body }) : Promise.resolve(null),
  );
  const view = params.get('view') === 'trend' ? 'trend' : 'steps';
  const drill = params.get('drill');
  return (
    <>
      <div class="filters">
        <Select label="Range" name="range" value={body.range} options={RANGES} />
        <ProductPicker access={access} value={params.get('product') ?? ''} all />
        <Select label="Breakdown" name="breakdown" value={params.get('breakdown') ?? ''} options={BREAKDOWNS} />
        <Select
          label="Show as"
          name="view"
          value={view}
          options={[
            ['steps', 'Steps'],
            ['trend', 'Conversion over time'],
          ]}
        />
        {view === 'trend' && (
          <Select label="Interval" name="interval" value={params.get('interval') ?? 'day'} options={['day', 'week', 'month'].map((i) => [i, i])} />
        )}
      </div>
      <Steps params={params} />
      {!ready ? (
        <Empty title="Add at least two steps">Add steps (category and name) above to build a funnel.</Empty>
      ) : (
        <Show q={q} what="the funnel">
          {(f) =>
            !f || f.entered === 0 ? (
              <Empty title="Nobody entered this funnel in the range">Widen the range, or check the first step's category and name (Event explorer).</Empty>
            ) : (
              <div data-funnel-ready="true">
                <p class="summary">
                  <strong>{fmt.format(f.entered)}</strong> entered, <strong>{fmt.format(f.converted)}</strong> converted (
                  <strong>{pct(f.conversion_rate)}</strong>)
                </p>
                {view === 'trend' ? <Trend f={f} /> : <Bars f={f} />}
                <StepTable f={f} />
                {f.breakdown && <BreakdownTable f={f} />}
              </div>
            )
          }
        </Show>
      )}
      {ready && drill && <DrillDown key={JSON.stringify([body, drill])} params={params} drill={drill} />}
    </>
  );
}

/** Steps as horizontal bars, one group per step; one bar per breakdown value when there is one. */
function Bars({ f }: { f: FunnelAnswer }) {
  const groups = f.breakdown ?? [{ value: null, steps: f.steps }];
  return (
    <figure class="funnel-bars">
      <figcaption>Conversion from the first step{f.breakdown ? ', per breakdown value' : ''}</figcaption>
      {f.breakdown && (
        <ul class="legend" aria-label="Breakdown values">
          {groups.map((g, i) => (
            <li key={i}>
              <span class="swatch" style={{ background: COLORS[i % COLORS.length] }} /> {label(g.value)}
            </li>
          ))}
        </ul>
      )}
      {f.steps.map((s, k) => (
        <div class="funnel-step" key={k}>
          <div class="funnel-label">
            {s.step}. {s.category} / {s.name}
          </div>
          {groups.map((g, i) => {
            const st = g.steps[k]!;
            return (
              <div class="bar-row" key={i}>
                <div class="bar" style={{ width: `${Math.max(0.5, st.conversion_from_first * 100)}%`, background: COLORS[i % COLORS.length] }} />
                <span class="bar-value">
                  {fmt.format(st.count)} ({pct(st.conversion_from_first)})
                </span>
              </div>
            );
          })}
        </div>
      ))}
    </figure>
  );
}

function Trend({ f }: { f: FunnelAnswer }) {
  if (f.trends.length === 0) return <p class="muted">No conversion trend for this range.</p>;
  return (
    <LineChart
      title="Conversion rate over time, percent"
      times={f.trends.map((t) => Date.parse(t.period_start) / 1000)}
      series={[{ label: 'conversion %', values: f.trends.map((t) => Math.round(t.conversion_rate * 1000) / 10) }]}
    />
  );
}

const drillHref = (params: URLSearchParams, step: number, status: string, value?: string | null) => {
  const p = new URLSearchParams(params);
  p.set('drill', [step, status, ...(value === undefined ? [] : [value === null ? '~' : `=${value}`])].join(':'));
  return `#/funnels?${p.toString()}`;
};

function StepTable({ f }: { f: FunnelAnswer }) {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return (
    <div class="table-wrap" tabIndex={0}>
      <table data-table="funnel-steps">
        <caption>Funnel steps: who reached each step and who dropped before it (open either to see the actors)</caption>
        <Head cols={['Step', 'Event', 'Reached', 'From first', 'From previous', 'Dropped', 'Drop-off', 'Median time']} />
        <tbody>
          {f.steps.map((s) => (
            <tr key={s.step}>
              <td>{s.step}</td>
              <td>
                {s.category} / {s.name}
              </td>
              <td>
                <a href={drillHref(params, s.step, 'reached')} aria-label={`${fmt.format(s.count)} reached step ${s.step}: show them`}>
                  {fmt.format(s.count)}
                </a>
              </td>
              <td>{pct(s.conversion_from_first)}</td>
              <td>{pct(s.conversion_from_previous)}</td>
              <td>
                {s.step === 1 ? (
                  '—'
                ) : (
                  <a href={drillHref(params, s.step, 'dropped')} aria-label={`${fmt.format(s.dropped)} dropped before step ${s.step}: show them`}>
                    {fmt.format(s.dropped)}
                  </a>
                )}
              </td>
              <td>{s.step === 1 ? '—' : pct(s.drop_off)}</td>
              <td>{s.median_seconds === null ? '—' : `${fmt.format(Math.round(s.median_seconds))} s`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function BreakdownTable({ f }: { f: FunnelAnswer }) {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return (
    <div class="table-wrap" tabIndex={0}>
      <table data-table="funnel-breakdown">
        <caption>Per breakdown value: reached (conversion from the first step)</caption>
        <thead>
          <tr>
            <th scope="col">Value</th>
            {f.steps.map((s) => (
              <th scope="col" key={s.step}>
                {s.step}. {s.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {f.breakdown!.map((g, i) => (
            <tr key={i}>
              <td>{label(g.value)}</td>
              {g.steps.map((s) => (
                <td key={s.step}>
                  <a href={drillHref(params, s.step, 'reached', g.value)} aria-label={`${label(g.value)}: ${fmt.format(s.count)} reached step ${s.step}`}>
                    {fmt.format(s.count)}
                  </a>{' '}
                  ({pct(s.conversion_from_first)})
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface UnitPage {
  data: { id: string }[];
  next_cursor: string | null;
  count_by: string;
  segment_id?: string;
}

/** drill=<step>:<reached|dropped>[:=<value> | :~ for no value] */
export function parseDrill(drill: string) {
  const [step = '1', status = 'reached', ...rest] = drill.split(':');
  const v = rest.join(':');
  return { step: Number(step), status: status === 'dropped' ? 'dropped' : 'reached', value: v === '' ? undefined : v === '~' ? null : v.slice(1) };
}

function DrillDown({ params, drill }: { params: URLSearchParams; drill: string }) {
  const d = parseDrill(drill);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [saved, setSaved] = useState<{ id: string; name: string } | null>(null);
  const [name, setName] = useState('');
  const body = {
    ...funnelBody(params),
    step: d.step,
    status: d.status,
    ...(d.value !== undefined ? { breakdown_value: d.value } : {}),
  };
  const cursor = cursors[cursors.length - 1];
  const q = useQuery(JSON.stringify([body, cursor]), () =>
    api<UnitPage>('/v1/funnels/actors', { method: 'POST', body: { ...body, limit: 50, ...(cursor ? { cursor } : {}) } }),
  );
  const csv = async () => {
    const text = await api<string>('/v1/funnels/actors', { method: 'POST', body, accept: 'text/csv' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
    a.download = `funnel-step-${d.step}-${d.status}.csv`;
    a.click();
  };
  const save = async (e: Event) => {
    e.preventDefault();
    if (!name.trim()) return;
    const r = await api<UnitPage>('/v1/funnels/actors', { method: 'POST', body: { ...body, limit: 1, save_as_segment: { name: name.trim() } } });
    setSaved(r.segment_id ? { id: r.segment_id, name: name.trim() } : null);
  };
  const title = `${d.status === 'dropped' ? 'Dropped before' : 'Reached'} step ${d.step}${d.value !== undefined ? `, ${label(d.value)}` : ''}`;
  return (
    <section class="drill" aria-label="Drill-down">
      <h2>{title}</h2>
      <p>
        <button type="button" onClick={() => setParam('drill', undefined)}>
          Close
        </button>{' '}
        <button type="button" onClick={() => void csv()}>
          Download all as CSV
        </button>
      </p>
      <form class="filters" onSubmit={(e) => void save(e)}>
        <span class="field">
          <label for="segment-name">Segment name</label>
          <input id="segment-name" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="Dropped at checkout" />
        </span>
        <button type="submit" disabled={!name.trim()}>
          Save as segment
        </button>
        {saved && (
          <span role="status">
            Saved: <a href={href('segments', { segment: saved.id })}>segment “{saved.name}”</a>
          </span>
        )}
      </form>
      <Show q={q} what="the actors">
        {(p) => (
          <>
            {p.data.length === 0 ? (
              <p class="muted">Nobody.</p>
            ) : (
              <ul class="actors" data-drill-ready="true">
                {p.data.map((u) => (
                  <li key={u.id}>{u.id}</li>
                ))}
              </ul>
            )}
            <p>
              <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
                Previous page
              </button>{' '}
              <button type="button" disabled={!p.next_cursor} onClick={() => setCursors([...cursors, p.next_cursor!])}>
                Next page
              </button>
            </p>
          </>
        )}
      </Show>
    </section>
  );
}

function Steps({ params }: { params: URLSearchParams }) {
  const steps = stepsOf(params);
  const [draft, setDraft] = useState('');
  const save = (next: { category: string; name: string }[]) => setParams({ steps: next.map((s) => `${s.category}:${s.name}`).join(','), drill: undefined });
  return (
    <ol class="steps" aria-label="Funnel steps">
      {steps.map((s, i) => (
        <li key={i}>
          {s.category} / {s.name}{' '}
          <button type="button" class="quiet" disabled={steps.length <= 1} onClick={() => save(steps.filter((_, j) => j !== i))}>
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
