import { Type, type Static } from 'typebox';
import { AppError, validationError } from '../errors.js';
import type { Permission } from '../domain/keys.js';
import type { Queryable } from '../storage/db.js';
import { rollupInfo } from '../storage/accounts.js';
import type { TenantRow } from '../storage/tenants.js';
import { requireAccountAnswers } from './guard.js';
import { cursorKey } from './page.js';
import { segmentFilterSql } from './behaviour/segments.js';
import { tenantProducts } from './behaviour/event-sql.js';
import { echo, localDate, localWall, resolveScope, zonedMidnight, zonedTime, type Scope } from './scope.js';
import { Params } from './params.js';

// The one filter grammar of the query side (docs/reports.md): every report, the sessions, the
// environment and the event explorer take these parameters, parse them here and nowhere else.
// The scope resolver (scope.ts) does range, time zone, interval, product, version and the plan
// guard; this module adds what only reports need: category, name, property equality, compare,
// the `read` / `view_accounts` permissions, and the SQL conditions on raw events.

const Id = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 256, description }));
export const FilterProps = {
  range: Type.Optional(
    Type.String({ maxLength: 8, description: '`Nd` (the N local days ending today, 1–730), `24h` or `month` (this calendar month so far); default 30d' }),
  ),
  from: Type.Optional(
    Type.String({
      maxLength: 40,
      description: 'ISO 8601 date or date-time; a bare date is local midnight in tz, a date-time without an offset is wall time in tz. Not with range',
    }),
  ),
  to: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601 date or date-time (exclusive), read as from is; default now' })),
  tz: Type.Optional(Type.String({ maxLength: 64, description: 'IANA time zone name; default UTC' })),
  interval: Type.Optional(Type.Enum(['hour', 'day', 'week', 'month'], { description: 'bucket width; weeks start on Monday; default day' })),
  product: Id('product id or slug'),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'a product_version, or `latest` (needs product)' })),
  category: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  account_id: Id('needs view_accounts, a plan with account views and account context enabled'),
  license_id: Id('needs view_accounts, a plan with account views and account context enabled'),
  property: Type.Optional(
    Type.Array(Type.String({ minLength: 2, maxLength: 322 }), {
      maxItems: 5,
      description: 'event property equality, `key:value` (split at the first colon); repeat for AND; values compare as strings',
    }),
  ),
  compare: Type.Optional(Type.Literal('previous', { description: 'also answer the previous period of the same length' })),
  segment_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'only the actors of this saved segment (docs/behaviour.md); 404 not_found if unknown' }),
  ),
};
export const FilterQuery = Type.Object(FilterProps);
export type FilterParams = Partial<Static<typeof FilterQuery>>;

export interface Principal {
  permissions: readonly Permission[];
  tenant: Readonly<TenantRow>;
}

export interface Filters {
  scope: Scope;
  category?: string | undefined;
  name?: string | undefined;
  properties: [string, string][];
  compare: boolean;
  /** `range=Nd`: N, so that the previous period is whole local days too. */
  days?: number | undefined;
  /** `range=month`: the previous period is the previous calendar month. */
  month: boolean;
  /** segment_id: its actors as `SELECT u …` with its own $1…$n and their values (see segmentWhere). */
  segment?: { text: string; values: unknown[] } | undefined;
}

function parseProperties(raw: string[] | undefined): [string, string][] {
  return (raw ?? []).map((p) => {
    const i = p.indexOf(':');
    if (i < 1 || i > 64 || p.length - i - 1 > 256 || p.includes('\u0000'))
      throw validationError([{ field: 'property', message: 'key:value, key 1–64 and value up to 256 characters' }]);
    return [p.slice(0, i), p.slice(i + 1)];
  });
}

export async function resolveFilters(q: Queryable, principal: Principal, p: FilterParams, now: Date): Promise<Filters> {
  if (p.account_id !== undefined || p.license_id !== undefined) requireAccountAnswers(principal);
  const properties = parseProperties(p.property);
  const scope = await resolveScope(q, principal.tenant, p, now);
  const days = /^(\d+)d$/.exec(p.range ?? (p.from === undefined && p.to === undefined ? '30d' : ''));
  let segment: Filters['segment'];
  if (p.segment_id !== undefined) {
    const own = new Params();
    segment = { text: await segmentFilterSql(q, principal, p.segment_id, own, now), values: own.values };
  }
  return {
    segment,
    scope,
    category: p.category,
    name: p.name,
    properties,
    compare: p.compare === 'previous',
    days: days ? Number(days[1]) : undefined,
    month: p.range === 'month',
  };
}

/**
 * The previous period: `range=Nd` moves back N local days (so its buckets are whole days too),
 * `month` the previous calendar month over the same span, from/to by their length.
 */
export function previousPeriod(f: Filters): Filters {
  const { from, to, tz } = f.scope;
  const period = (prevFrom: Date, prevTo: Date): Filters => ({ ...f, compare: false, scope: { ...f.scope, from: prevFrom, to: prevTo } });
  if (f.days === undefined && !f.month) return period(new Date(from.getTime() - (to.getTime() - from.getTime())), from);
  // Local calendar arithmetic, never elapsed time: across a change of the zone's offset the
  // previous period still starts at a local midnight and ends at the same local time of day.
  const d = localDate(from, tz);
  const w = localWall(to, tz);
  if (f.days !== undefined) return period(zonedMidnight(d.y, d.m, d.d - f.days, tz), zonedTime(w.y, w.m, w.d - f.days, tz, w.h, w.mi, w.s, w.ms));
  // The previous calendar month to the same day and time; a day it does not have (March 31 → February): its whole month.
  const daysBefore = new Date(Date.UTC(w.y, w.m - 1, 0)).getUTCDate();
  return period(zonedMidnight(d.y, d.m - 1, 1, tz), w.d > daysBefore ? from : zonedTime(w.y, w.m - 1, w.d, tz, w.h, w.mi, w.s, w.ms));
}

/**
 * The head and one period's answer and, when the filters ask for it (`compare=previous`), the same
 * answer for the previous period under `compare`, with that period's range. The head and the
 * periods go out together (on a PostgreSQL server, each on its own connection). `answer` computes
 * one period's fields from its filters; `toNow` says whether that period ends now.
 */
export async function withCompare<T extends object>(q: Queryable, f: Filters, toNow: boolean, answer: (f: Filters, toNow: boolean) => Promise<T>) {
  const prev = f.compare ? previousPeriod(f) : undefined;
  const [h, current, before] = await Promise.all([head(q, f.scope), answer(f, toNow), prev ? answer(prev, false) : undefined]);
  if (!prev || !before) return { ...h, ...current };
  return { ...h, ...current, compare: { range: { from: prev.scope.from.toISOString(), to: prev.scope.to.toISOString() }, ...before } };
}

/** What every answer opens with: the resolved range, time zone, interval, and how fresh derived data is. */
export async function head(q: Queryable, s: Scope) {
  const r = await rollupInfo(q, s.tenantId);
  return { ...echo(s), refreshed_at: r?.refreshed_at ?? null };
}

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000, month: 28 * 86_400_000 } as const;
/** A series longer than this many points is a 422 query_too_large naming interval and range. */
export const MAX_BUCKETS = 2_000;
export function checkBuckets(s: Scope): void {
  const n = Math.ceil((s.to.getTime() - s.from.getTime()) / BUCKET_MS[s.interval]);
  if (n > MAX_BUCKETS) throw seriesTooLong(`${n} ${s.interval} buckets; at most ${MAX_BUCKETS}: narrow the range or widen the interval`);
}

/** A series of too many points for its range (a report's buckets, a funnel's or retention's periods): a 422 naming `field` and the range. */
export function seriesTooLong(message: string, field = 'interval'): AppError {
  return new AppError(422, 'query_too_large', message, {
    errors: [
      { field, message: 'too many points for the range' },
      { field: 'range', message: `too long for the ${field}` },
    ],
  });
}

/**
 * The raw events of the filters (alias e), from..to; the actor resolved through identify links is `actor`. `source`: the table
 * they are read from, `events` or a CTE of its rows (a chunk, chunks.ts).
 */
export function rawEvents(f: Filters, sql: Params, columns: string, joins = '', source = 'events'): string {
  const s = f.scope;
  const tenant = sql.add(s.tenantId);
  const product = s.productId ? sql.add(s.productId) : undefined;
  // A name read from the table goes through events_by_name, whose leading columns the filters give
  // as lists where they do not name them: the tenant's products, and a name's categories (below).
  const byName = f.name !== undefined && source === 'events';
  const where = [`e.tenant_id = ${tenant}`, `e.occurred_at >= ${sql.add(s.from)}`, `e.occurred_at < ${sql.add(s.to)}`];
  if (product) where.push(`e.product_id = ${product}`);
  else if (byName) where.push(`e.product_id = ANY(${tenantProducts(tenant)})`);
  if (s.version !== undefined) where.push(`e.product_version = ${sql.add(s.version)}`);
  if (s.accountId !== undefined) where.push(`e.account_id = ${sql.add(s.accountId)}`);
  if (s.licenseId !== undefined) where.push(`e.license_id = ${sql.add(s.licenseId)}`);
  if (f.category !== undefined) where.push(`e.category = ${sql.add(f.category)}`);
  if (f.name !== undefined) where.push(`e.name = ${sql.add(f.name)}`);
  if (byName && f.category === undefined) where.push(`e.category = ANY(${eventCategories(tenant, product)})`);
  for (const [k, v] of f.properties) where.push(`e.properties ->> ${sql.add(k)} = ${sql.add(v)}`);
  if (f.segment) where.push(segmentWhere(f, sql, ACTOR));
  return `SELECT ${columns} FROM ${source} e LEFT JOIN actor_links l ON l.tenant_id = e.tenant_id AND l.anonymous_actor_id = e.actor_id ${joins} WHERE ${where.join(' AND ')}`;
}

/**
 * SQL: every category the tenant's events have (of one product, when given), as an array: a
 * loose index scan of events_by_name (one probe per product and category, each asking for the
 * next (product, category) after the last), always current. A filter by name alone then reads
 * that name's events through events_by_name, which leads with (tenant, product, category, name),
 * instead of every event of the range (docs/reports.md, "Filters by name").
 */
function eventCategories(tenant: string, product: string | undefined): string {
  // With a product, the probe asks for the next category of that product: a row comparison over
  // (product_id, category) next to product_id = … is not a start key for the index, and each probe
  // then walked the product's entries up to the next category (437 ms a probe at 10M events).
  const [of, key, after] = product
    ? [`tenant_id = ${tenant} AND product_id = ${product}`, 'category', 'category > c.cat']
    : [`tenant_id = ${tenant}`, 'product_id, category', '(product_id, category) > (c.p, c.cat)'];
  return `ARRAY(WITH RECURSIVE c(p, cat) AS (
    (SELECT product_id, category FROM events WHERE ${of} ORDER BY ${key} LIMIT 1)
    UNION ALL
    SELECT x.product_id, x.category FROM c, LATERAL (
      SELECT product_id, category FROM events WHERE ${of} AND ${after} ORDER BY ${key} LIMIT 1) x)
  SELECT DISTINCT cat FROM c)`;
}

export const ACTOR = 'coalesce(l.identified_actor_id, e.actor_id)';

/** `<actor> IN (the segment's actors)`, its parameters renumbered into sql; 'true' without segment_id. Actors are identified ids. */
export function segmentWhere(f: Filters, sql: Params, actor: string): string {
  if (!f.segment) return 'true';
  const { text, values } = f.segment;
  return `${actor} IN (${text.replace(/\$(\d+)/g, (_, i: string) => sql.add(values[Number(i) - 1]))})`;
}

/** The local bucket an instant falls in, as a timestamp without time zone. */
export const bucketOf = (col: string, sql: Params, s: Scope) => `date_trunc('${s.interval}', ${col} AT TIME ZONE ${sql.add(s.tz)})`;

/** Every local bucket of the range, empty ones too (b: local timestamp). */
export function bucketSeries(sql: Params, s: Scope): string {
  const tz = sql.add(s.tz);
  return `SELECT generate_series(date_trunc('${s.interval}', ${sql.add(s.from)}::timestamptz AT TIME ZONE ${tz}),
            ${sql.add(s.to)}::timestamptz AT TIME ZONE ${tz} - interval '1 microsecond', interval '1 ${s.interval}') AS b`;
}

/** A bucket's label: its local start, `YYYY-MM-DD` (day, week, month) or `YYYY-MM-DDTHH:00` (hour). */
export const label = (col: string, s: Scope) => (s.interval === 'hour' ? `to_char(${col}, 'YYYY-MM-DD"T"HH24:00')` : `to_char(${col}, 'YYYY-MM-DD')`);

/** The filters that apply to sessions and exceptions (no event name, category or property). */
export const RecordFilterProps = (({ category: _c, name: _n, property: _p, segment_id: _s, ...rest }) => rest)(FilterProps);

/** Conditions on a table with tenant_id, product_id, product_version, account_id, license_id and a time column. */
export function recordWhere(f: Filters, sql: Params, time: string, alias: string): string[] {
  const s = f.scope;
  const where = [`${alias}.tenant_id = ${sql.add(s.tenantId)}`, `${alias}.${time} >= ${sql.add(s.from)}`, `${alias}.${time} < ${sql.add(s.to)}`];
  if (s.productId) where.push(`${alias}.product_id = ${sql.add(s.productId)}`);
  if (s.version !== undefined) where.push(`${alias}.product_version = ${sql.add(s.version)}`);
  if (s.accountId !== undefined) where.push(`${alias}.account_id = ${sql.add(s.accountId)}`);
  if (s.licenseId !== undefined) where.push(`${alias}.license_id = ${sql.add(s.licenseId)}`);
  return where;
}

/**
 * Conditions on rm_usage_days (per UTC day, account, license, product and version) for the scope's
 * filters over the UTC days from `from` up to `to` (both UTC midnights; `to` excluded).
 */
export function usageDaysWhere(s: Scope, sql: Params, to: Date): string[] {
  const where = [
    `tenant_id = ${sql.add(s.tenantId)}`,
    `day >= ${sql.add(s.from.toISOString().slice(0, 10))}::date`,
    `day < ${sql.add(to.toISOString().slice(0, 10))}::date`,
  ];
  if (s.productId) where.push(`product_id = ${sql.add(s.productId)}`);
  if (s.version !== undefined) where.push(`product_version = ${sql.add(s.version)}`);
  if (s.accountId !== undefined) where.push(`account_id = ${sql.add(s.accountId)}`);
  if (s.licenseId !== undefined) where.push(`license_id = ${sql.add(s.licenseId)}`);
  return where;
}

/** A keyset cursor (exact timestamp, id): the page layer's shape check, then a real date PostgreSQL can hold. */
export function keysetCursor(cursor: string | undefined, id: RegExp = /^.+$/su): [string, string] | undefined {
  const key = cursorKey(cursor, ['timestamp', 'text']);
  if (!key) return undefined;
  const ymd = /^(\d{4})-(\d{2})-(\d{2})T/.exec(key[0]!);
  const real =
    ymd !== null &&
    Number(ymd[1]) >= 1970 &&
    new Date(Date.UTC(Number(ymd[1]), Number(ymd[2]) - 1, Number(ymd[3]))).toISOString().slice(0, 10) === ymd[0].slice(0, 10);
  if (!real || !id.test(key[1]!)) throw validationError([{ field: 'cursor', message: 'not a cursor this API returned' }]);
  return [key[0]!, key[1]!];
}
