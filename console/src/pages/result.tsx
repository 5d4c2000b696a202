// Report answers drawn without knowing their exact shape in advance: the first list of rows in
// the answer becomes a table (and a chart when rows have a time and numbers); a row holding a
// list of numbers (a retention cohort) becomes heatmap cells.
import { isValidElement, type ComponentChildren } from 'preact';
import { LineChart } from '../chart';
import { fmt, keyValues, pct } from '../data';
import { Empty, noWrap } from '../ui';

type Row = Record<string, unknown>;
const TIME_KEYS = ['t', 'time', 'bucket', 'interval_start', 'start', 'date', 'day', 'period', 'period_start', 'cohort'];

/** A retention cohort's periods ({period, count, percentage, …}) become its percentages, 0–100: heatmap cells. */
function cellsOf(row: Row): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    // A small object of numbers (release health's adoption) becomes columns of its own.
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'number' || x === null)) {
      for (const [sub, x] of Object.entries(v)) out[`${k}_${sub}`] = x;
      continue;
    }
    const periods = Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'object' && x !== null && typeof (x as Row).percentage === 'number');
    out[periods ? `${k}_pct` : k] = periods ? (v as Row[]).map((x) => Math.round((x.percentage as number) * 1000) / 10) : v;
  }
  return out;
}

export function rowsOf(answer: unknown): Row[] {
  if (Array.isArray(answer)) return answer.filter((r): r is Row => typeof r === 'object' && r !== null).map(cellsOf);
  if (typeof answer !== 'object' || answer === null) return [];
  for (const key of ['data', 'series', 'steps', 'rows', 'cohorts', 'matrix', 'paths', 'versions', 'groups', 'points']) {
    const v = (answer as Row)[key];
    if (Array.isArray(v)) return rowsOf(v);
  }
  return [];
}

/** Ratios (0–1) of the behaviour answers, and percentages (0–100) of the session, environment and version answers. */
const RATIO = /^(conversion|drop_off|conversion_rate)/;
const PERCENT = /^(crash_free|adoption|actor_share|share_on)/;
const MIDNIGHT = /^(\d{4}-\d{2}-\d{2})T00:00:00(\.0+)?Z$/;

const cell = (v: unknown, col = ''): ComponentChildren =>
  isValidElement(v)
    ? v // a link a page's rows made (the explorer's session)
    : typeof v === 'number' && RATIO.test(col) && v >= 0 && v <= 1
      ? pct(v)
      : typeof v === 'number' && PERCENT.test(col)
        ? pct(v, 100)
        : typeof v === 'string' && MIDNIGHT.test(v)
          ? v.slice(0, 10) // a period start: the day says it all
          : typeof v === 'number'
            ? fmt.format(v)
            : v === null || v === undefined
              ? '—'
              : typeof v === 'object'
                ? keyValues(v)
                : String(v);

export function toCsv(rows: Row[]): string {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const esc = (v: unknown) => {
    // A link a page's rows made stands for the value it carries (data-value).
    const s = isValidElement(v)
      ? String((v.props as { 'data-value'?: unknown })['data-value'] ?? '')
      : v === null || v === undefined
        ? ''
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(','), ...rows.map((r) => cols.map((c) => esc(r[c])).join(','))].join('\n');
}

const BLUE = [29, 78, 216];
const DARK = '#0f172a'; // relative luminance 0.0087
/** Relative luminance (WCAG) of the cell's blue at `alpha` over the white page. */
function luminance(alpha: number): number {
  const lin = (c: number) => {
    const x = (255 * (1 - alpha) + c * alpha) / 255;
    return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(BLUE[0]!) + 0.7152 * lin(BLUE[1]!) + 0.0722 * lin(BLUE[2]!);
}

/**
 * A heatmap cell: deeper blue for more, with dark or white text, whichever contrasts more. Some
 * mid blues reach 4.5:1 (WCAG AA, with a margin for the card behind) with neither; a cell that would be one is made deeper until
 * white text does.
 */
function heat(v: number, max: number): { background: string; color: string } {
  const a = max > 0 ? Math.min(1, v / max) : 0;
  let alpha = 0.08 + a * 0.8;
  for (;;) {
    const l = luminance(alpha);
    const onWhite = 1.05 / (l + 0.05);
    const onDark = (l + 0.05) / 0.0587;
    if (onDark >= 4.6) return { background: `rgba(29, 78, 216, ${alpha.toFixed(3)})`, color: DARK };
    if (onWhite >= 4.6 || alpha >= 1) return { background: `rgba(29, 78, 216, ${alpha.toFixed(3)})`, color: '#ffffff' };
    alpha = Math.min(1, alpha + 0.01);
  }
}

export function Result({
  answer,
  view,
  title,
  dataColumns = false,
  empty,
}: {
  answer: unknown;
  view: string;
  title: string;
  /** Column names are data (breakdown values): shown exactly as sent, not made into words. */
  dataColumns?: boolean | undefined;
  empty?: string | undefined;
}) {
  const rows = rowsOf(answer);
  if (rows.length === 0)
    return empty ? (
      <Empty title="Nothing here yet">{empty}</Empty>
    ) : (
      <Empty title="No data for this view">Widen the range or remove a filter; if nothing at all shows, send events first (see Overview).</Empty>
    );
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const timeKey = TIME_KEYS.find((k) => cols.includes(k) && rows.every((r) => !Number.isNaN(Date.parse(String(r[k])))));
  const numeric = cols.filter((c) => c !== timeKey && rows.every((r) => typeof r[c] === 'number'));
  const arrays = cols.filter((c) => rows.some((r) => Array.isArray(r[c]) && (r[c] as unknown[]).every((x) => typeof x === 'number')));
  const scalars = cols.filter((c) => !arrays.includes(c));
  const max = Math.max(0, ...rows.flatMap((r) => arrays.flatMap((c) => (r[c] as number[] | undefined) ?? [])).filter((x) => x <= 1e12));
  const width = Math.max(0, ...rows.flatMap((r) => arrays.map((c) => ((r[c] as unknown[] | undefined) ?? []).length)));
  return (
    <>
      {timeKey && numeric.length > 0 && view !== 'table' && (
        <LineChart
          title={title}
          bars={view === 'bar'}
          times={rows.map((r) => Date.parse(String(r[timeKey])) / 1000)}
          series={numeric.map((c) => ({ label: c, values: rows.map((r) => r[c] as number) }))}
        />
      )}
      <div class="table-wrap" tabIndex={0}>
        <table class={arrays.length ? 'heatmap' : undefined}>
          <caption>{title}</caption>
          <thead>
            <tr>
              {scalars.map((c) => (
                <th scope="col" key={c}>
                  {dataColumns ? c : c.replaceAll('_', ' ')}
                </th>
              ))}
              {arrays.length > 0 && Array.from({ length: width }, (_, i) => <th scope="col" key={`p${i}`}>{`+${i}`}</th>)}
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i}>
                {scalars.map((c) => {
                  const text = cell(r[c], c);
                  return (
                    <td key={c} class={noWrap(text)}>
                      {text}
                    </td>
                  );
                })}
                {arrays.flatMap((c) =>
                  ((r[c] as number[] | undefined) ?? []).map((v, j) =>
                    // An empty cohort has no rate to show: a blank, not a 0 % that reads as churn.
                    r.size === 0 ? (
                      <td key={`${c}${j}`}>—</td>
                    ) : (
                      <td key={`${c}${j}`} class="nw" style={heat(v, max)}>
                        {c.endsWith('_pct') ? pct(v, 100) : cell(v)}
                      </td>
                    ),
                  ),
                )}
                {arrays.length === 1 &&
                  Array.from({ length: width - ((r[arrays[0]!] as unknown[] | undefined) ?? []).length }, (_, j) => <td key={`pad${j}`} aria-hidden="true" />)}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
