import { validationError } from '../../errors.js';
import type { Db } from '../../storage/db.js';
import type { Reader } from '../guard.js';
import { cursorKey, pageOf } from '../page.js';
import { echo } from '../scope.js';
import { runFunnel, type FunnelQuery, type FunnelRun } from './funnels.js';

// Drill-down: who is behind a number. The units (actors, sessions or accounts) are listed by id,
// paged with the query layer's cursor; CSV takes the whole list up to CSV_MAX rows.

export const CSV_MAX = 100_000;

export interface DrillPage {
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** Sorted ids, paged after the cursor's id. */
export function pageIds(ids: string[], p: DrillPage) {
  const limit = p.limit ?? 50;
  const after = cursorKey(p.cursor, ['text'])?.[0];
  const sorted = [...ids].sort();
  const rest = after === undefined ? sorted : sorted.filter((id) => id > after);
  return pageOf(
    rest.slice(0, limit + 1).map((id) => ({ id })),
    limit,
    (r) => [r.id],
  );
}

export interface FunnelActorsQuery extends FunnelQuery, DrillPage {
  step: number;
  status?: 'reached' | 'dropped' | undefined;
  breakdown_value?: string | null | undefined;
}

/** The units that reached a step, or dropped at it (reached the step before, not this one). */
export async function funnelUnitIds(db: Db, who: Reader, q: FunnelActorsQuery, now: Date) {
  const { step: k, status, breakdown_value, limit: _l, cursor: _c, ...query } = q;
  // A step past the funnel's last is an error, not the last step's units.
  if (k > query.steps.length) throw validationError([{ field: 'step', message: `1 to ${query.steps.length}: the funnel has ${query.steps.length} steps` }]);
  // Nothing is dropped at the first step (there is no step before it), and a breakdown value
  // names a value of the funnel's breakdown: either would otherwise answer an empty list.
  if (status === 'dropped' && k === 1) throw validationError([{ field: 'status', message: 'dropped applies from step 2: no one drops at the first step' }]);
  if (breakdown_value !== undefined && query.breakdown === undefined)
    throw validationError([{ field: 'breakdown_value', message: 'a value of the funnel’s breakdown: give breakdown too' }]);
  const run = await runFunnel(db, who, query, now);
  const ids = run.units
    .filter((u) => u.result.reached > 0 && (breakdown_value === undefined || u.value === breakdown_value))
    .filter((u) => (status === 'dropped' ? k > 1 && u.result.reached === k - 1 : u.result.reached >= k))
    .map((u) => u.unit);
  return { run, ids };
}

export function funnelActorsPage(run: FunnelRun, ids: string[], q: DrillPage, now: Date) {
  return { count_by: run.query.count_by, ...pageIds(ids, q), ...echo(run.scope), refreshed_at: now.toISOString() };
}

/** One id per line under a header naming the unit; ids are quoted when CSV needs it. */
export function idsCsv(header: string, ids: string[]): string {
  // A leading = + - @ would be a formula in a spreadsheet: it gets a ' first.
  const cell = (raw: string) => {
    const v = /^[=+\-@\t\r]/.test(raw) ? `'${raw}` : raw;
    return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
  };
  return [header, ...[...ids].sort().slice(0, CSV_MAX).map(cell)].join('\r\n') + '\r\n';
}
