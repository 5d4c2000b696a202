import { api, type Page } from '../api';
import { fmt, keyValues, rangeSince, useQuery, when } from '../data';
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

/** The occurrences' page (its cursor and number): a new filter starts at the newest again. */
const PAGING = ['occ', 'occ_page'];

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
        <ProductPicker access={access} value={product} all clears={PAGING} />
        <Select
          label="Severity"
          name="severity"
          clears={PAGING}
          value={severity}
          options={[
            ['', 'Any'],
            ['fatal', 'Fatal'],
            ['non_fatal', 'Non-fatal'],
          ]}
        />
        <Select label="Range" name="range" value={range} options={RANGES} clears={PAGING} />
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
                  <a href={href('exceptions', { ...Object.fromEntries(params), fingerprint: g.fingerprint, occ: undefined, occ_page: undefined })}>
                    {g.exception_type}
                  </a>,
                  fmt.format(g.count),
                  fmt.format(g.fatal),
                  fmt.format(g.affected_actors),
                  g.versions.join(', '),
                  when(g.first_seen),
                  when(g.last_seen),
                ])}
              />
              {open && <Detail group={page.data.find((g) => g.fingerprint === open)} range={range} product={product} severity={severity} params={params} />}
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

/** The range of a group's trend and occurrences: the list's, or 30 days when the list shows all time. */
const trendRange = (range: string) => (['24h', '7d', '30d', '90d'].includes(range) ? range : '30d');

/** The group's occurrences per day over the range. */
function Trend({ fingerprint, range, product }: { fingerprint: string; range: string; product: string }) {
  const r = trendRange(range);
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

interface Occurrence {
  exception_id: string;
  occurred_at: string;
  product: string;
  product_version: string;
  severity: string;
  message: string | null;
  actor_id: string;
  identified_actor_id: string | null;
  session_id: string | null;
  account_id?: string | null;
  license_id?: string | null;
  environment: unknown;
}

/** Occurrences per page of the list; the page's cursor is `occ` in the URL (none: the newest). */
export const OCCURRENCES_PAGE = 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The group's occurrences in the trend's range, newest first, a page at a time: the page's cursor
 * and number are in the URL (`occ`, `occ_page`), so a page can be shared, reloaded, and left with
 * the browser's Back. A session links to its events in the event explorer (the sessions page shows
 * no single session).
 */
function Occurrences({
  fingerprint,
  range,
  product,
  severity,
  params,
}: {
  fingerprint: string;
  range: string;
  product: string;
  severity: string;
  params: URLSearchParams;
}) {
  const cursor = params.get('occ') ?? '';
  const pageNo = Math.max(1, Number(params.get('occ_page') ?? '1') || 1);
  const query = { range, product, severity, limit: OCCURRENCES_PAGE, cursor };
  const q = useQuery(JSON.stringify([fingerprint, query]), () =>
    api<Page<Occurrence>>(`/v1/exceptions/${encodeURIComponent(fingerprint)}/occurrences`, { query }),
  );
  const here = Object.fromEntries(params);
  return (
    <Show q={q} what="the group's occurrences">
      {(page) => {
        const accounts = page.data.some((o) => 'account_id' in o);
        const first = (pageNo - 1) * OCCURRENCES_PAGE + 1;
        return (
          <div data-occurrences-ready="true">
            <h3 id="occurrences-title">Occurrences, newest first</h3>
            {page.data.length === 0 ? (
              <p class="muted">{cursor ? 'No older occurrences.' : 'No occurrences in this range and filter.'}</p>
            ) : (
              <Table
                id="occurrences"
                caption={`Occurrences ${fmt.format(first)}–${fmt.format(first + page.data.length - 1)}${severity ? ` (${severity.replace('_', '-')})` : ''}`}
                head={['Time', 'Severity', 'Version', 'Actor', 'Session', 'Message', ...(accounts ? ['Account', 'License'] : []), 'Environment']}
                rows={page.data.map((o) => [
                  <span data-id={o.exception_id}>{when(o.occurred_at)}</span>,
                  o.severity === 'fatal' ? 'fatal' : 'non-fatal',
                  `${o.product} ${o.product_version}`,
                  o.identified_actor_id ? `${o.identified_actor_id} (${o.actor_id})` : o.actor_id,
                  o.session_id === null ? (
                    '—'
                  ) : UUID.test(o.session_id) ? (
                    <a href={href('events', { session_id: o.session_id, range, product })} aria-label={`Events of session ${o.session_id}`}>
                      {o.session_id.slice(0, 8)}
                    </a>
                  ) : (
                    o.session_id
                  ),
                  o.message ?? '(no message)',
                  ...(accounts ? [o.account_id ?? '—', o.license_id ?? '—'] : []),
                  keyValues(o.environment),
                ])}
              />
            )}
            <p class="pager">
              {cursor && (
                <a href={href('exceptions', { ...here, occ: undefined, occ_page: undefined })} data-pager="newest">
                  Newest
                </a>
              )}{' '}
              {page.next_cursor && (
                <a href={href('exceptions', { ...here, occ: page.next_cursor, occ_page: String(pageNo + 1) })} data-pager="older">
                  Older occurrences →
                </a>
              )}
            </p>
          </div>
        );
      }}
    </Show>
  );
}

function Detail({
  group,
  range,
  product,
  severity,
  params,
}: {
  group: Group | undefined;
  range: string;
  product: string;
  severity: string;
  params: URLSearchParams;
}) {
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
      <Occurrences fingerprint={group.fingerprint} range={trendRange(range)} product={product} severity={severity} params={params} />
      <h3>Stack trace</h3>
      <pre class="stack" tabIndex={0}>
        {s.stack_trace ?? '(no stack trace sent)'}
      </pre>
    </section>
  );
}
