import { api, type Page } from '../api';
import { rangeSince, useQuery, when } from '../data';
import { Empty, RANGES, Select, Show, Table, TextFilter } from '../ui';
import type { PageProps } from './common';

interface DeadLetter {
  id: string;
  kind: string;
  reason: string;
  message: string;
  product: string | null;
  payload: unknown;
  received_at: string;
}

const KINDS: [string, string][] = [['', 'Any'], ...['event', 'session', 'session_end', 'exception', 'identify'].map((k): [string, string] => [k, k])];

export function DeadLetters({ params }: PageProps) {
  const range = params.get('range') ?? '';
  const query = { kind: params.get('kind') ?? '', reason: params.get('reason') ?? '', product: params.get('product') ?? '', limit: 100 };
  // The key names the range, not its start: "since" moves with the clock.
  const q = useQuery(JSON.stringify([query, range]), () => api<Page<DeadLetter>>('/v1/invalid-events', { query: { ...query, since: rangeSince(range) } }));
  return (
    <>
      <div class="filters">
        <Select label="Kind" name="kind" value={query.kind} options={KINDS} />
        <TextFilter label="Reason" name="reason" value={query.reason} />
        <TextFilter label="Product (as sent)" name="product" value={query.product} />
        <Select label="Range" name="range" value={range} options={RANGES} />
      </div>
      <Show q={q} what="dead letters">
        {(page) =>
          page.data.length === 0 ? (
            <Empty title="Nothing rejected in this view">
              <p>Every record the server refuses is kept here for 30 days with its reason and the payload as sent.</p>
            </Empty>
          ) : (
            <Table
              caption="Rejected records, newest first"
              head={['Received', 'Kind', 'Reason', 'Message', 'Product', 'Payload']}
              rows={page.data.map((d) => [
                when(d.received_at),
                d.kind,
                <code>{d.reason}</code>,
                d.message,
                d.product ?? '—',
                <details>
                  <summary>payload</summary>
                  <pre>{typeof d.payload === 'string' ? d.payload : JSON.stringify(d.payload, null, 2)}</pre>
                </details>,
              ])}
            />
          )
        }
      </Show>
    </>
  );
}
