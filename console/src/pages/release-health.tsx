// Release health per version: 13 numbers a row, grouped under two header rows (sessions by
// status, actors, crash-free, adoption) so that each column's own header is one short word and
// the table fits the page beside the navigation (a row of 13 field names did not).
import { fmt, pct } from '../data';
import { Empty, noWrap } from '../ui';

export interface HealthRow {
  product: string;
  product_version: string;
  sessions: number;
  actors: number;
  crashed_sessions: number;
  errored_sessions: number;
  abnormal_sessions: number;
  healthy_sessions: number;
  crashed_actors: number;
  crash_free_sessions: number | null;
  crash_free_actors: number | null;
  adoption: { sessions: number | null; actors: number | null } | null;
}

const GROUPS: [string, string[]][] = [
  ['Sessions', ['total', 'crashed', 'errored', 'abnormal', 'healthy']],
  ['Actors', ['total', 'crashed']],
  ['Crash-free', ['sessions', 'actors']],
  ['Adoption', ['sessions', 'actors']],
];

/** The cells that open a group (a rule on their left): after product and version, then after each group. */
const STARTS = new Set<number>();
for (let i = 0, at = 2; i < GROUPS.length; at += GROUPS[i]![1].length, i++) STARTS.add(at);

const rate = (v: number | null | undefined) => (v === null || v === undefined ? '—' : pct(v, 100));

/** A row's cells, in the order of the header's columns. */
export function healthCells(r: HealthRow): string[] {
  return [
    r.product,
    r.product_version,
    ...[r.sessions, r.crashed_sessions, r.errored_sessions, r.abnormal_sessions, r.healthy_sessions, r.actors, r.crashed_actors].map((n) => fmt.format(n)),
    rate(r.crash_free_sessions),
    rate(r.crash_free_actors),
    rate(r.adoption?.sessions),
    rate(r.adoption?.actors),
  ];
}

export function ReleaseHealthTable({ answer, title }: { answer: unknown; title: string }) {
  const rows = (answer as { data: HealthRow[] }).data;
  if (rows.length === 0)
    return <Empty title="No sessions in this range">Sessions come from the client (it starts one per run); widen the range or pick another product.</Empty>;
  return (
    <div class="table-wrap" tabIndex={0}>
      <table data-table="release-health" class="grouped">
        <caption>{title} per version; adoption is the version's share of all versions' sessions and actors</caption>
        <colgroup span={2} />
        {GROUPS.map(([g, cols]) => (
          <colgroup key={g} span={cols.length} />
        ))}
        <thead>
          <tr>
            <th scope="col" rowSpan={2}>
              Product
            </th>
            <th scope="col" rowSpan={2}>
              Version
            </th>
            {GROUPS.map(([g, cols]) => (
              <th scope="colgroup" colSpan={cols.length} key={g} class="group">
                {g}
              </th>
            ))}
          </tr>
          <tr>
            {GROUPS.flatMap(([g, cols]) =>
              cols.map((c, i) => (
                <th scope="col" key={`${g}-${c}`} class={i === 0 ? 'group-start' : undefined}>
                  {c}
                </th>
              )),
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={`${r.product} ${r.product_version}`}>
              {healthCells(r).map((c, i) => (
                <td key={i} class={[noWrap(c), STARTS.has(i) ? 'group-start' : ''].filter(Boolean).join(' ') || undefined}>
                  {c}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
