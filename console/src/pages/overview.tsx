// What a vendor sees first: events and active actors over 30 days, crash-free sessions, versions,
// exception groups, dead letters and how fresh the read model is, each from its own endpoint
// (every plan sees them; the accounts table only on account plans).
import { api, ApiError, type Page } from '../api';
import { fmt, pct, useQuery, when } from '../data';
import { href } from '../route';
import { Card, ErrorState, Loading, Table } from '../ui';
import { LineChart } from '../chart';
import { FirstEvent, type PageProps } from './common';
import type { Group } from './exceptions';
import type { Version } from './versions';

interface TrendsAnswer {
  refreshed_at: string | null;
  series: { total: { events: number; actors: number }; data: { date: string; events: number; actors: number }[] }[];
}
interface AccountTrends {
  series: { breakdown_value: string | null; other: boolean; total: { events: number } }[];
}
interface HealthRow {
  sessions: number;
  crashed_sessions: number;
}
interface DeadLetter {
  id: string;
  reason: string;
  received_at: string;
}

const optional = <T,>(p: Promise<T>) => p.catch((e: unknown) => (e instanceof ApiError ? e : Promise.reject(e)));

export function Overview({ access }: PageProps) {
  const q = useQuery('overview', async () => {
    const day = new Date(Date.now() - 86_400_000).toISOString();
    const [versions, groups, dead, trends, health, accounts] = await Promise.all([
      Promise.all(
        access.products.map((p) => api<Page<Version>>(`/v1/products/${encodeURIComponent(p.slug)}/versions`, { query: { limit: 500 } }).then((r) => r.data)),
      ),
      api<Page<Group>>('/v1/exceptions', { query: { limit: 5 } }),
      api<Page<DeadLetter>>('/v1/invalid-events', { query: { since: day, limit: 500 } }),
      // Events, and the actors of the 30 local days ending today: today's rolling MAU (the same
      // days as /v1/reports/active-actors counts for it), and today's DAU as the last day's.
      api<TrendsAnswer>('/v1/reports/trends', { query: { range: '30d', interval: 'day' } }),
      api<{ data: HealthRow[] }>('/v1/sessions/release-health', { query: { range: '30d' } }),
      // The five accounts with the most events over the same 30 days (trends ranks its breakdown's top values by events;
      // /v1/accounts lists accounts by id).
      access.accounts === 'ok'
        ? optional(api<AccountTrends>('/v1/reports/trends', { query: { range: '30d', interval: 'month', breakdown: 'account', limit: 5 } }))
        : null,
    ]);
    const sessions = health.data.reduce((n, r) => n + r.sessions, 0);
    const crashed = health.data.reduce((n, r) => n + r.crashed_sessions, 0);
    return {
      versions: versions.flat(),
      groups: groups.data,
      moreGroups: groups.next_cursor !== null,
      dead,
      trends,
      crashFree: sessions ? { rate: 1 - crashed / sessions, sessions } : null,
      accounts,
    };
  });
  if (!access.read) return <ErrorState error={new ApiError(403, 'forbidden', 'this key has no read permission')} />;
  if (q.state === 'loading') return <Loading what="the overview" />;
  if (q.state === 'error') return <ErrorState error={q.error} retry={q.reload} />;
  const { versions, groups, moreGroups, dead, trends, crashFree, accounts } = q.data;
  const events = trends.series.reduce((n, s) => n + s.total.events, 0);
  const perDay = trends.series[0]?.data ?? [];
  const mau = trends.series[0]?.total.actors ?? 0;
  const dau = perDay.at(-1)?.actors ?? 0;
  const noEvents = !mau && versions.length === 0 && groups.length === 0;
  const acc = accounts instanceof ApiError || !accounts ? [] : accounts.series.filter((a) => !a.other && a.breakdown_value !== null);
  const latest = [...versions].sort((a, b) => (b.last_seen ?? '').localeCompare(a.last_seen ?? ''))[0];
  return (
    <div class="overview" data-ready="true" data-complete="true">
      <div class="cards">
        <Card id="products" label="Products" value={fmt.format(access.products.length)} />
        <Card
          id="versions"
          label="Versions"
          value={fmt.format(versions.length)}
          hint={latest ? `last seen: ${latest.product} ${latest.product_version}` : undefined}
        />
        <Card id="events-30d" label="Events, 30 days" value={fmt.format(events)} />
        <Card id="mau" label="Active actors, 30 days" value={fmt.format(mau)} hint={`today: ${fmt.format(dau)}`} />
        <Card
          id="crash-free"
          label="Crash-free sessions, 30 days"
          value={crashFree ? pct(crashFree.rate) : '—'}
          hint={crashFree ? `of ${fmt.format(crashFree.sessions)} sessions` : 'no sessions yet (the client starts them)'}
        />
        <Card
          id="exception-groups"
          label="Exception groups"
          value={`${fmt.format(groups.length)}${moreGroups ? '+' : ''}`}
          hint={groups.length ? 'the most recent are listed below' : undefined}
        />
        <Card id="dead-letters-24h" label="Dead letters, 24 h" value={`${fmt.format(dead.data.length)}${dead.next_cursor ? '+' : ''}`} />
        <Card
          id="freshness"
          label="Data refreshed"
          value={ago(trends.refreshed_at)}
          hint={
            trends.refreshed_at
              ? `read model: ${when(trends.refreshed_at)}; raw-event reports are live`
              : 'the read model is refreshed about a minute after the first events arrive'
          }
        />
      </div>
      {perDay.length > 0 && !!events && (
        <section>
          <h2>Events per day</h2>
          <LineChart
            title="Events per day, last 30 days"
            times={perDay.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000)}
            series={[{ label: 'events', values: perDay.map((d) => d.events) }]}
          />
        </section>
      )}
      {noEvents && <FirstEvent product={access.products[0]?.slug} />}
      <section>
        <h2>Latest exception groups</h2>
        {groups.length === 0 ? (
          <p class="muted">No exceptions. Capture one with the client's captureException(err).</p>
        ) : (
          <Table
            caption="The five most recent exception groups"
            head={['Type', 'Occurrences', 'Actors', 'Last seen']}
            rows={groups.map((g) => [
              <a href={href('exceptions', { fingerprint: g.fingerprint })}>{g.exception_type}</a>,
              fmt.format(g.count),
              fmt.format(g.affected_actors),
              when(g.last_seen),
            ])}
          />
        )}
      </section>
      <section>
        <h2>Dead letters, last 24 hours</h2>
        {dead.data.length === 0 ? (
          <p class="muted">Nothing was rejected in the last 24 hours.</p>
        ) : (
          <p>
            {fmt.format(dead.data.length)}
            {dead.next_cursor ? '+' : ''} rejected records; most common reason: <code>{topReason(dead.data)}</code>.{' '}
            <a href={href('dead-letters', { range: '24h' })}>See them</a>
          </p>
        )}
      </section>
      {acc.length > 0 && (
        <section>
          <h2>Most active accounts (30 days)</h2>
          <Table
            caption="Accounts by events"
            head={['Account', 'Events']}
            rows={acc.map((a) => [a.breakdown_value, fmt.format(a.total.events)])}
            id="top-accounts"
          />
        </section>
      )}
    </div>
  );
}

function ago(iso: string | null | undefined): string {
  if (!iso) return 'not yet';
  const minutes = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 60_000));
  return minutes < 1 ? 'just now' : minutes < 120 ? `${minutes} min ago` : `${Math.round(minutes / 60)} h ago`;
}

function topReason(rows: DeadLetter[]): string {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.reason, (counts.get(r.reason) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
}
