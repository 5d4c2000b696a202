import { validationError } from '../../errors.js';
import { ACTOR, Params, rawEvents, segmentWhere, type Filters } from '../filters.js';
import { localDate, zonedMidnight } from '../scope.js';

// The active actors of a range as (local day, actor) pairs: the source of DAU/WAU/MAU,
// stickiness and lifecycle. From the read model's actor days when they answer exactly (UTC days,
// no filter they do not keep: category, name, property, version); otherwise from raw events in the
// time zone's own days (docs/reports.md: the read model keeps UTC days only).

const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'UCT', 'Etc/GMT', 'GMT', 'Etc/Zulu', 'Zulu', 'Etc/Universal', 'Universal']);

export interface ActorDays {
  /** SQL of a CTE body with columns day (date) and actor (text). */
  sql: string;
  /** First and last local day of the range itself (the CTE reaches back further, for rolling windows and lifecycle). */
  firstDay: string;
  lastDay: string;
  source: 'read_model' | 'events';
}

const iso = (d: { y: number; m: number; d: number }) => new Date(Date.UTC(d.y, d.m - 1, d.d)).toISOString().slice(0, 10);

/** The pairs from `from` less 29 days (MAU's window) or the previous month's start, whichever is earlier, to `to`. */
export function actorDays(f: Filters, sql: Params): ActorDays {
  const s = f.scope;
  if (s.interval === 'hour') throw validationError([{ field: 'interval', message: 'active actors are counted per day, week or month' }]);
  const first = localDate(s.from, s.tz);
  const last = localDate(new Date(s.to.getTime() - 1), s.tz);
  const back = Math.min(zonedMidnight(first.y, first.m, first.d - 29, s.tz).getTime(), zonedMidnight(first.y, first.m - 1, 1, s.tz).getTime());
  const wide: Filters = { ...f, scope: { ...s, from: new Date(back) } };
  const exact = UTC_ZONES.has(s.tz) && f.category === undefined && f.name === undefined && f.properties.length === 0 && s.version === undefined;
  const range = { firstDay: iso(first), lastDay: iso(last) };
  if (!exact) {
    return { ...range, source: 'events', sql: rawEvents(wide, sql, `DISTINCT (e.occurred_at AT TIME ZONE ${sql.p(s.tz)})::date AS day, ${ACTOR} AS actor`) };
  }
  const where = [
    `tenant_id = ${sql.p(s.tenantId)}`,
    `day >= ${sql.p(iso(localDate(new Date(back), s.tz)))}::date`,
    `day <= ${sql.p(range.lastDay)}::date`,
    'events > 0',
  ];
  if (s.productId) where.push(`product_id = ${sql.p(s.productId)}`);
  if (s.accountId !== undefined) where.push(`account_id = ${sql.p(s.accountId)}`);
  if (s.licenseId !== undefined) where.push(`license_id = ${sql.p(s.licenseId)}`);
  where.push(segmentWhere(f, sql, 'actor_id'));
  return { ...range, source: 'read_model', sql: `SELECT DISTINCT day, actor_id AS actor FROM rm_actor_days WHERE ${where.join(' AND ')}` };
}
