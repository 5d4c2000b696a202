// Shared pieces: loading, error, empty and "not on this server yet" states, tables, filters.
import { isValidElement, type ComponentChildren } from 'preact';
import type { ApiError } from './api';
import type { Loaded } from './data';
import { setParam, setParams } from './route';

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorState({ error, retry }: { error: ApiError; retry?: () => void }) {
  // A route this server does not have (an older server), not a missing object.
  if (error.status === 404 && error.detail.startsWith('no route '))
    return (
      <div class="notice" role="note">
        <h2>Not available on this server yet</h2>
        <p>This server does not answer this report ({error.detail || 'not found'}). It arrives with a newer version of Tally; the rest of the console works.</p>
      </div>
    );
  if (error.status === 402)
    return (
      <div class="notice plan" role="note">
        <h2>Needs another plan</h2>
        <p>{error.detail}</p>
        <p>Ask your operator (whoever runs this Tally server) to change the plan.</p>
        <p class="muted">
          Operators change it with <code>npm run admin -- set-plan &lt;tenant&gt; business</code>.
        </p>
      </div>
    );
  const advice =
    error.status === 401
      ? 'The key is not valid any more: sign out and sign in with a current key.'
      : error.status === 403
        ? 'This key may not see this. Sign in with a key that has the permission.'
        : error.status === 429
          ? 'Too many requests for this plan: wait a minute and retry.'
          : error.status === 0
            ? 'The server did not answer: is it running?'
            : 'Retry; if it persists, check the server log.';
  return (
    <div class="notice error" role="alert">
      <h2>
        Could not load ({error.status || 'network'} {error.code})
      </h2>
      <p>{error.detail}</p>
      <p>{advice}</p>
      {retry && (
        <button type="button" onClick={retry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** Renders a query's loading and error states, or its data through `children`. */
export function Show<T>({ q, what, children }: { q: Loaded<T> & { reload: () => void }; what: string; children: (data: T) => ComponentChildren }) {
  if (q.state === 'loading') return <Loading what={what} />;
  if (q.state === 'error') return <ErrorState error={q.error} retry={q.reload} />;
  return <>{children(q.data)}</>;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

export function Card({ label, value, hint, id }: { label: string; value: ComponentChildren; hint?: ComponentChildren; id?: string }) {
  return (
    <div class="card" data-metric={id}>
      <div class="card-label">{label}</div>
      <div class="card-value">{value}</div>
      {hint && <div class="card-hint">{hint}</div>}
    </div>
  );
}

/** A filter of the URL; `clears`: other parameters it resets (a page cursor that belongs to the old filter). */
export function Select({
  label,
  name,
  value,
  options,
  clears = [],
}: {
  label: string;
  name: string;
  value: string;
  options: [string, string][];
  clears?: string[];
}) {
  const id = `f-${name}`;
  return (
    <span class="field">
      <label for={id}>{label}</label>
      <select
        id={id}
        value={value}
        onChange={(e) =>
          setParams({ ...Object.fromEntries(clears.map((c) => [c, undefined])), [name]: (e.currentTarget as HTMLSelectElement).value || undefined })
        }
      >
        {options.map(([v, l]) => (
          <option value={v} key={v}>
            {l}
          </option>
        ))}
      </select>
    </span>
  );
}

export function TextFilter({ label, name, value }: { label: string; name: string; value: string }) {
  const id = `f-${name}`;
  return (
    <span class="field">
      <label for={id}>{label}</label>
      {/* Uncontrolled, keyed by the URL's value: another filter's commit (its blur re-renders the form) never resets what is being typed here; a new value from the URL remounts it. */}
      <input key={value} id={id} defaultValue={value} onChange={(e) => setParam(name, (e.currentTarget as HTMLInputElement).value.trim() || undefined)} />
    </span>
  );
}

export const RANGES: [string, string][] = [
  ['', 'All time'],
  ['24h', 'Last 24 hours'],
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'],
];

/** A table's header row: one column header per name. */
export function Head({ cols }: { cols: string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((h) => (
          <th scope="col" key={h}>
            {h}
          </th>
        ))}
      </tr>
    </thead>
  );
}

const STAMP = /^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2})?( UTC)?)?$/;
/**
 * The class of a cell that should stay on one line: a short value, an id or version without
 * spaces (never broken at its hyphens: `user-\n0`), a time (`2026-11-29 08:40 UTC`). Text with
 * spaces (messages, environments, paths) wraps.
 */
export const noWrap = (c: ComponentChildren): 'nw' | undefined => {
  // A link or span around a value (an occurrence's time, a session) is judged by its text.
  const v = isValidElement(c) && typeof (c.props as { children?: unknown }).children === 'string' ? (c.props as { children: string }).children : c;
  return typeof v === 'number' || (typeof v === 'string' && v.length <= 64 && (!/\s/.test(v) || v.length <= 12 || STAMP.test(v))) ? 'nw' : undefined;
};

export function Table({ caption, head, rows, id }: { caption: string; head: string[]; rows: ComponentChildren[][]; id?: string }) {
  return (
    <div class="table-wrap" tabIndex={0}>
      <table data-table={id}>
        <caption>{caption}</caption>
        <Head cols={head} />
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              {r.map((c, j) => (
                <td key={j} class={noWrap(c)}>
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
