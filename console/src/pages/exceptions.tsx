import { api, type Page } from '../api';
import { fmt, rangeSince, useQuery, when } from '../data';
import { href } from '../route';
import { LineChart } from '../chart';
import { Empty, RANGES, Select, Show, Table } from '../ui';
import { ProductPicker, type PageProps } from './common';

export interface Group {
  fingerprint: string;
  exception_type: string;
  count: number;
  fatal: number;
  affected_actors: number;
  first_seen: string;
  last_seen: string;
  versions: string[];
  sample: { exception_id: string; severity: string; message: string | null; stack_trace: string | null; occurred_at: string; product_version: string };
}

export function Exceptions({ access, params }: PageProps) {
  const product = params.get('product') ?? '';
  const severity = params.get('severity') ?? '';
  const range = params.get('range') ?? '';
  const open = params.get('fingerprint');
  const query = { product, severity, limit: 100 };
  // The key names the range, not its start: "since" moves with the clock.
  const q = useQuery(JSON.stringify([query, range]), () => api<Page<Group>>('/v1/exceptions', { query: { ...query, since: rangeSince(range) } }));
  return (
    <>
      <div class="filters">
        <ProductPicker access={access} value={product} all />
        <Select
          label="Severity"
          name="severity"
          value={severity}
          options={[
            ['', 'Any'],
            ['fatal', 'Fatal'],
            ['non_fatal', 'Non-fatal'],
          ]}
        />
        <Select label="Range" name="range" value={range} options={RANGES} />
      </div>
      <Show q={q} what="exception groups">
        {(page) =>
          page.data.length === 0 ? (
            <Empty title="No exceptions in this view">
              <p>Exceptions arrive from the client's captureException(err), or POST /v1/events/exceptions.</p>
            </Empty>
          ) : (
            <>
              <Table
                caption="Exception groups by fingerprint, newest first"
                head={['Type', 'Occurrences', 'Fatal', 'Actors', 'Versions', 'First seen', 'Last seen']}
                rows={page.data.map((g) => [
                  <a href={href('exceptions', { ...Object.fromEntries(params), fingerprint: g.fingerprint })}>{g.exception_type}</a>,
                  fmt.format(g.count),
                  fmt.format(g.fatal),
                  fmt.format(g.affected_actors),
                  g.versions.join(', '),
                  when(g.first_seen),
                  when(g.last_seen),
                ])}
              />
              {open && <Detail group={page.data.find((g) => g.fingerprint === open)} range={range} product={product} />}
            </>
          )
        }
      </Show>
    </>
  );
}

interface GroupTrend {
  first_version: string;
  last_version: string;
  total: { count: number; fatal: number; actors: number };
  data: { date: string; count: number; fatal: number; actors: number }[];
}

/** The group's occurrences per day over the range (30 days when the list shows all time). */
function Trend({ fingerprint, range, product }: { fingerprint: string; range: string; product: string }) {
  const r = ['24h', '7d', '30d', '90d'].includes(range) ? range : '30d';
  const q = useQuery(JSON.stringify([fingerprint, r, product]), () =>
    api<GroupTrend>(`/v1/exceptions/${encodeURIComponent(fingerprint)}`, { query: { range: r, product, interval: r === '24h' ? 'hour' : 'day' } }),
  );
  return (
    <Show q={q} what="the group's trend">
      {(t) => (
        <div data-trend-ready="true">
          <h3>Occurrences, {r === '24h' ? 'last 24 hours' : `last ${r.replace('d', ' days')}`}</h3>
          <p>
            <span data-metric="trend-total">{fmt.format(t.total.count)}</span> occurrences, {fmt.format(t.total.fatal)} fatal, {fmt.format(t.total.actors)}{' '}
            actors affected; first seen on version {t.first_version}, latest on {t.last_version}.
          </p>
          <LineChart
            title={`Occurrences of ${fingerprint} per ${r === '24h' ? 'hour' : 'day'}`}
            bars
            times={t.data.map((d) => Date.parse(d.date.length === 10 ? `${d.date}T00:00:00Z` : `${d.date}:00Z`) / 1000)}
            series={[
              { label: 'occurrences', values: t.data.map((d) => d.count) },
              { label: 'fatal', values: t.data.map((d) => d.fatal) },
            ]}
          />
        </div>
      )}
    </Show>
  );
}

function Detail({ group, range, product }: { group: Group | undefined; range: string; product: string }) {
  if (!group) return <p class="muted">That group is not in this view: widen the filters.</p>;
  const s = group.sample;
  return (
    <section class="detail" aria-labelledby="group-title">
      <h2 id="group-title">{group.exception_type}</h2>
      <p>
        Latest occurrence {when(s.occurred_at)}, {s.severity}, version {s.product_version}: {s.message ?? '(no message)'}
      </p>
      <p class="muted">Fingerprint {group.fingerprint}</p>
      <Trend fingerprint={group.fingerprint} range={range} product={product} />
      <h3>Stack trace</h3>
      <pre class="stack" tabIndex={0}>
        {s.stack_trace ?? '(no stack trace sent)'}
      </pre>
    </section>
  );
}
