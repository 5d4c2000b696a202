// What a vendor sees first: the numbers the server has today, each from its own endpoint, and
// how fresh they are. Report numbers (events per day, crash-free rate) come from the report
// endpoints when the server has them.
import { api, ApiError, type Page } from '../api';
import { fmt, useQuery, when } from '../data';
import { href } from '../route';
import { Card, ErrorState, Loading, Table } from '../ui';
import { FirstEvent, type PageProps } from './common';
import type { Group } from './exceptions';
import type { Version } from './versions';

interface Coverage {
  refreshed_at: string | null;
  events: { total: number; account_pct: number };
  sessions: { total: number };
  exceptions: { total: number };
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
    const [versions, groups, dead, coverage, accounts, active, health] = await Promise.all([
      Promise.all(
        access.products.map((p) => api<Page<Version>>(`/v1/products/${encodeURIComponent(p.slug)}/versions`, { query: { limit: 500 } }).then((r) => r.data)),
      ),
      api<Page<Group>>('/v1/exceptions', { query: { limit: 5 } }),
      api<Page<DeadLetter>>('/v1/invalid-events', { query: { since: day, limit: 500 } }),
      access.accounts === 'ok' ? optional(api<Coverage>('/v1/accounts/coverage')) : null,
      access.accounts === 'ok'
        ? optional(api<Page<{ account_id: string; events: number }> & { refreshed_at: string | null }>('/v1/accounts', { query: { limit: 5 } }))
        : null,
      // The report endpoints (issue 15): shown when this server has them.
      optional(api<unknown>('/v1/reports/active-actors', { query: { range: '30d' } })),
      optional(api<unknown>('/v1/sessions/release-health', { query: { range: '30d' } })),
    ]);
    return { versions: versions.flat(), groups: groups.data, dead, coverage, accounts, active: numbersOf(active), health: numbersOf(health) };
  });
  if (!access.read) return <ErrorState error={new ApiError(403, 'forbidden', 'this key has no read permission')} />;
  if (q.state === 'loading') return <Loading what="the overview" />;
  if (q.state === 'error') return <ErrorState error={q.error} retry={q.reload} />;
  const { versions, groups, dead, coverage, accounts, active, health } = q.data;
  const noEvents = versions.length === 0 && groups.length === 0;
  const cov = coverage instanceof ApiError ? null : coverage;
  const acc = accounts instanceof ApiError ? null : accounts;
  const latest = [...versions].sort((a, b) => (b.last_seen ?? '').localeCompare(a.last_seen ?? ''))[0];
  return (
    <div class="overview" data-ready="true">
      <div class="cards">
        <Card id="products" label="Products" value={fmt.format(access.products.length)} />
        <Card
          id="versions"
          label="Versions"
          value={fmt.format(versions.length)}
          hint={latest ? `last seen: ${latest.product} ${latest.product_version}` : undefined}
        />
        <Card
          id="events-30d"
          label="Events, 30 days"
          value={cov ? fmt.format(cov.events.total) : '—'}
          hint={cov ? undefined : 'needs the account views (view_accounts, Business plan)'}
        />
        {active.mau !== undefined && (
          <Card
            id="mau"
            label="Active actors, 30 days"
            value={fmt.format(active.mau)}
            hint={active.dau !== undefined ? `today: ${fmt.format(active.dau)}` : undefined}
          />
        )}
        {health.crash_free_sessions !== undefined && <Card id="crash-free" label="Crash-free sessions" value={pct(health.crash_free_sessions)} />}
        <Card id="exception-groups" label="Exception groups (latest)" value={fmt.format(groups.length)} />
        <Card id="dead-letters-24h" label="Dead letters, 24 h" value={`${fmt.format(dead.data.length)}${dead.next_cursor ? '+' : ''}`} />
        <Card
          id="freshness"
          label="Data refreshed"
          value={ago(cov?.refreshed_at ?? acc?.refreshed_at)}
          hint={`accounts and licenses rollup: ${when(cov?.refreshed_at ?? acc?.refreshed_at)}`}
        />
      </div>
      {noEvents && <FirstEvent product={access.products[0]?.slug} />}
      <section>
        <h2>Top exception groups</h2>
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
      {acc && acc.data.length > 0 && (
        <section>
          <h2>Most active accounts (30 days)</h2>
          <Table caption="Accounts by events" head={['Account', 'Events']} rows={acc.data.map((a) => [a.account_id, fmt.format(a.events)])} />
        </section>
      )}
    </div>
  );
}

/** Top-level numbers of a report answer, if the server has the report (an ApiError otherwise). */
function numbersOf(answer: unknown): Record<string, number> {
  if (answer instanceof ApiError || typeof answer !== 'object' || answer === null) return {};
  const src = (answer as Record<string, unknown>).summary ?? (answer as Record<string, unknown>).totals ?? answer;
  return Object.fromEntries(Object.entries(src as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number'));
}

const pct = (v: number) => `${(v <= 1 ? v * 100 : v).toFixed(2)} %`;

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
