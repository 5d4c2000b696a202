import { api, type Page } from '../api';
import { fmt, useQuery, when } from '../data';
import { Empty, ErrorState, Show, Table } from '../ui';
import { ApiError } from '../api';
import { NoPermission, type PageProps } from './common';

interface Row {
  events: number;
  sessions: number;
  exceptions: number;
  active_actors: number;
  products: number;
  first_seen: string | null;
  last_seen: string | null;
}
type Rollup<T> = Page<T> & { refreshed_at: string | null; window_days: number };

function Gate({ access, children }: PageProps & { children: preact.ComponentChildren }) {
  if (access.accounts === 'plan') return <ErrorState error={new ApiError(402, 'plan_limit_reached', access.accountsDetail)} />;
  if (access.accounts === 'forbidden') return <NoPermission what="accounts and licenses" permission="view_accounts" />;
  if (access.accounts !== 'ok') return <ErrorState error={new ApiError(403, 'account_context_disabled', access.accountsDetail)} />;
  return <>{children}</>;
}

function RollupTable<T extends Row>({
  path,
  idOf,
  idLabel,
  extra,
}: {
  path: string;
  idOf: (r: T) => string;
  idLabel: string;
  extra: [string, (r: T) => number];
}) {
  const q = useQuery(path, () => api<Rollup<T>>(path, { query: { limit: 200 } }));
  return (
    <Show q={q} what={path.slice(4)}>
      {(page) => (
        <>
          <p class="muted" data-freshness>
            Last {page.window_days} days, refreshed {when(page.refreshed_at)}.
          </p>
          {page.data.length === 0 ? (
            <Empty title="Nothing observed yet">
              <p>Send events with account_id and license_id (the client's setAccount), then wait for the next rollup (a minute).</p>
            </Empty>
          ) : (
            <Table
              caption={`${idLabel}s observed`}
              head={[idLabel, 'Events', 'Sessions', 'Exceptions', 'Active actors', extra[0], 'Last seen']}
              rows={page.data.map((r) => [
                idOf(r),
                fmt.format(r.events),
                fmt.format(r.sessions),
                fmt.format(r.exceptions),
                fmt.format(r.active_actors),
                fmt.format(extra[1](r)),
                when(r.last_seen),
              ])}
            />
          )}
        </>
      )}
    </Show>
  );
}

export function Accounts(props: PageProps) {
  return (
    <Gate {...props}>
      <RollupTable<Row & { account_id: string; licenses: number }>
        path="/v1/accounts"
        idLabel="Account"
        idOf={(r) => r.account_id}
        extra={['Licenses', (r) => r.licenses]}
      />
    </Gate>
  );
}

export function Licenses(props: PageProps) {
  return (
    <Gate {...props}>
      <RollupTable<Row & { license_id: string; accounts: number }>
        path="/v1/licenses"
        idLabel="License"
        idOf={(r) => r.license_id}
        extra={['Accounts', (r) => r.accounts]}
      />
    </Gate>
  );
}
