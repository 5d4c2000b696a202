import { validationError } from '../errors.js';
import { pickLatest } from '../domain/version-selector.js';
import type { Queryable } from '../storage/db.js';
import { findProduct } from '../storage/products.js';
import { allVersions } from '../storage/versions.js';
import { rollupInfo } from '../storage/accounts.js';
import { requireFeature, type TenantPlan } from './guard.js';

// The one scope resolver of the query side: tenant, product, version (`latest` too), the date
// range in a time zone, and account_id / license_id behind the plan guard. Each query function
// takes the resolved Scope; nothing below it parses a parameter again.

export interface ScopeParams {
  product?: string | undefined;
  version?: string | undefined;
  range?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  tz?: string | undefined;
  interval?: string | undefined;
  account_id?: string | undefined;
  license_id?: string | undefined;
}

export type Interval = 'hour' | 'day' | 'week' | 'month';

export interface Scope {
  tenantId: string;
  /** undefined: every product. */
  productId?: string | undefined;
  version?: string | undefined;
  accountId?: string | undefined;
  licenseId?: string | undefined;
  from: Date;
  to: Date;
  tz: string;
  interval: Interval;
  /** The product (or its latest version) does not exist: every answer is empty. */
  empty: boolean;
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** A calendar date. */
export type Ymd = { y: number; m: number; d: number };
/** A calendar date as YYYY-MM-DD. */
export const isoDay = (d: Ymd) => new Date(Date.UTC(d.y, d.m - 1, d.d)).toISOString().slice(0, 10);
/** Whether calendar date a is on or before b: as numbers, since ISO text stops sorting at year 10000 (`+010000-01-01`). */
export const onOrBefore = (a: Ymd, b: Ymd) => Date.UTC(a.y, a.m - 1, a.d) <= Date.UTC(b.y, b.m - 1, b.d);
/** The calendar date n days after d. */
export function plusDays(d: Ymd, n: number): Ymd {
  const t = new Date(Date.UTC(d.y, d.m - 1, d.d + n));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}
const INTERVALS: readonly Interval[] = ['hour', 'day', 'week', 'month'];

/**
 * Names Intl (ICU) takes for zones that PostgreSQL reads otherwise: Java's three-letter ids that it
 * does not know (AET, CTT, …) or takes for a fixed-offset abbreviation (PST is -08:00 all year
 * there and America/Los_Angeles in ICU; CET, EET, MET and WET likewise lose their summer time),
 * SystemV zones with summer time (ICU keeps their old US rules), and names tzdata has dropped. The server computes
 * a range's midnights with Intl and the store buckets with AT TIME ZONE, so these would answer a
 * 500 or buckets cut at other hours than the range. test/time-zones.test.ts checks every other
 * name both ways on the store.
 */
const READ_OTHERWISE = new Set([
  'ACT',
  'AET',
  'AGT',
  'ART',
  'AST',
  'BET',
  'BST',
  'CAT',
  'CNT',
  'CST',
  'CTT',
  'ECT',
  'IET',
  'IST',
  'MIT',
  'NET',
  'NST',
  'PLT',
  'PNT',
  'PRT',
  'PST',
  'SST',
  'VST',
  'CET',
  'EET',
  'MET',
  'WET',
  'US/PACIFIC-NEW',
  'CANADA/EAST-SASKATCHEWAN',
]);

/** A zone name the server (Intl) and the store (AT TIME ZONE) read alike. */
export function validTimeZone(tz: string): boolean {
  if (tz.length > 64 || READ_OTHERWISE.has(tz.toUpperCase()) || /^systemv\/[a-z]+\d+[a-z]+dt$/i.test(tz)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * One formatter per zone, made once: constructing an Intl.DateTimeFormat costs far more than a
 * formatToParts with it, and a query computes hundreds of local midnights (retention's months in a
 * zone: ~60 ms of formatters per request on PGlite's 1M bench before this cache). Zones are
 * validated names, a few hundred at most.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** The zone's offset from UTC at `at`, in ms (positive east of Greenwich). */
function offsetMs(at: Date, tz: string): number {
  if (tz === 'UTC') return 0; // the default zone, asked per local day of a range: no formatter
  const parts = Object.fromEntries(
    formatter(tz)
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return wall - Math.floor(at.getTime() / 1000) * 1000;
}

/** The instant a local wall time reads in tz (midnight unless given), whatever the host's own zone. */
export function zonedTime(y: number, m: number, d: number, tz: string, h = 0, mi = 0, s = 0, ms = 0): Date {
  const guess = Date.UTC(y, m - 1, d, h, mi, s, ms);
  const first = guess - offsetMs(new Date(guess), tz);
  return new Date(guess - offsetMs(new Date(first), tz));
}

/** Midnight that starts the local calendar day `y-m-d` in tz. */
export const zonedMidnight = (y: number, m: number, d: number, tz: string): Date => zonedTime(y, m, d, tz);

/** The local calendar date of `at` in tz. */
export function localDate(at: Date, tz: string): Ymd {
  const local = new Date(at.getTime() + offsetMs(at, tz));
  return { y: local.getUTCFullYear(), m: local.getUTCMonth() + 1, d: local.getUTCDate() };
}

/** The local wall time of `at` in tz: its calendar date and time of day. */
export function localWall(at: Date, tz: string): Ymd & { h: number; mi: number; s: number; ms: number } {
  const local = new Date(at.getTime() + offsetMs(at, tz));
  return { ...localDate(at, tz), h: local.getUTCHours(), mi: local.getUTCMinutes(), s: local.getUTCSeconds(), ms: local.getUTCMilliseconds() };
}

/** Whether `at` is a local midnight in tz. */
export function isLocalMidnight(at: Date, tz: string): boolean {
  const l = localDate(at, tz);
  return at.getTime() === zonedMidnight(l.y, l.m, l.d, tz).getTime();
}

/** A valid zone name in its canonical spelling when it differs only in case (`utc` is `UTC`, `europe/berlin` is `Europe/Berlin`). */
function zoneSpelling(tz: string): string {
  const resolved = new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  return resolved.toLowerCase() === tz.toLowerCase() ? resolved : tz;
}

/**
 * `range` (`Nd`: the N local days ending today, today included; `24h`; `month`: this calendar
 * month so far) or `from` / `to` (ISO 8601; a bare date is local midnight in tz, a date-time
 * without an offset is wall time in tz). Default 30d.
 */
export function resolveRange(p: ScopeParams, now: Date): { from: Date; to: Date; tz: string; interval: Interval } {
  if (!validTimeZone(p.tz ?? 'UTC'))
    throw validationError([{ field: 'tz', message: 'not an IANA time zone name (a region such as America/Los_Angeles, not an abbreviation such as PST)' }]);
  const tz = zoneSpelling(p.tz ?? 'UTC');
  const interval = (p.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw validationError([{ field: 'interval', message: 'one of hour, day, week, month' }]);
  if (p.range !== undefined && (p.from !== undefined || p.to !== undefined))
    throw validationError([{ field: 'range', message: 'give range or from/to, not both' }]);
  const point = (field: 'from' | 'to', v: string): Date => {
    // A bare date, or a date-time without an offset (`Z` or ±hh:mm), is read in tz, not in the host's zone (what `new Date` would do).
    const local = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?)?$/.exec(v);
    const [h, mi, s] = [Number(local?.[4] ?? 0), Number(local?.[5] ?? 0), Number(local?.[6] ?? 0)];
    const at = local
      ? h > 23 || mi > 59 || s > 59
        ? new Date(NaN)
        : zonedTime(Number(local[1]), Number(local[2]), Number(local[3]), tz, h, mi, s, Number((local[7] ?? '0').padEnd(3, '0')))
      : /^\d{4}-\d{2}-\d{2}T/.test(v)
        ? new Date(v)
        : new Date(NaN);
    // A calendar date that does not exist (Feb 30) is refused, not rolled over into the next month.
    // Years to 8999: what a query reaches past its range (the next local day, 90 retention periods)
    // stays before 10000, which ISO text writes `+010000-…` and PostgreSQL does not read.
    const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(v);
    const real = ymd !== null && new Date(Date.UTC(Number(ymd[1]), Number(ymd[2]) - 1, Number(ymd[3]))).toISOString().slice(0, 10) === ymd[0];
    if (!real || Number.isNaN(at.getTime()) || at.getUTCFullYear() < 1970 || at.getUTCFullYear() > 8999)
      throw validationError([{ field, message: 'an ISO 8601 date or date-time, in the years 1970 to 8999' }]);
    return at;
  };
  if (p.from !== undefined || p.to !== undefined) {
    const to = p.to !== undefined ? point('to', p.to) : now;
    const from = p.from !== undefined ? point('from', p.from) : new Date(to.getTime() - 30 * DAY_MS);
    if (from >= to) throw validationError([{ field: 'from', message: 'must be before to' }]);
    return { from, to, tz, interval };
  }
  const range = p.range ?? '30d';
  const today = localDate(now, tz);
  if (range === '24h') return { from: new Date(now.getTime() - DAY_MS), to: now, tz, interval };
  if (range === 'month') return { from: zonedMidnight(today.y, today.m, 1, tz), to: now, tz, interval };
  const days = /^([1-9]\d{0,2})d$/.exec(range);
  if (!days || Number(days[1]) > 730) throw validationError([{ field: 'range', message: 'Nd (1 to 730 days), 24h or month' }]);
  return { from: zonedMidnight(today.y, today.m, today.d - Number(days[1]) + 1, tz), to: now, tz, interval };
}

/** `latest` is a product's latest: without a product filter it is a 400 naming `version`. */
export function checkLatest(p: Pick<ScopeParams, 'product' | 'version'>): void {
  if (p.version === 'latest' && p.product === undefined) throw validationError([{ field: 'version', message: 'latest needs a product filter' }]);
}

/** Product (id or slug) and version (`latest`: the product's latest by its version rules). */
export async function resolveProduct(q: Queryable, tenantId: string, p: ScopeParams): Promise<{ productId?: string; version?: string; empty: boolean }> {
  checkLatest(p);
  let version = p.version;
  if (p.product === undefined) return { ...(version !== undefined && { version }), empty: false };
  const product = await findProduct(q, tenantId, p.product);
  if (!product) return { empty: true };
  if (version === 'latest') {
    const latest = pickLatest(await allVersions(q, tenantId, product.id));
    if (!latest) return { productId: product.id, empty: true };
    version = latest.product_version;
  }
  return { productId: product.id, ...(version !== undefined && { version }), empty: false };
}

/** The whole scope of a query; account_id / license_id pass the plan guard first. */
export async function resolveScope(q: Queryable, tenant: TenantPlan & { id: string }, p: ScopeParams, now: Date): Promise<Scope> {
  if (p.account_id !== undefined || p.license_id !== undefined) requireFeature(tenant, 'account_context');
  const range = resolveRange(p, now);
  const product = await resolveProduct(q, tenant.id, p);
  return { tenantId: tenant.id, ...range, ...product, accountId: p.account_id, licenseId: p.license_id };
}

/** What every answer echoes: the resolved range, the time zone, the interval. */
export function echo(s: Pick<Scope, 'from' | 'to' | 'tz' | 'interval'>): { range: { from: string; to: string }; tz: string; interval: Interval } {
  return { range: { from: s.from.toISOString(), to: s.to.toISOString() }, tz: s.tz, interval: s.interval };
}

/**
 * How fresh an answer is: the last fold's time when it read the read model (it holds what was
 * folded then), else now (raw events hold every stored record).
 */
export async function asOf(q: Queryable, tenantId: string, readModel: boolean, now: Date): Promise<string | null> {
  return readModel ? ((await rollupInfo(q, tenantId))?.refreshed_at ?? null) : now.toISOString();
}
