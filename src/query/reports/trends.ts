import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { queryTooLarge } from '../../errors.js';
import { BREAKDOWN_DESCRIPTION, ENV_JOIN, ENV_VALUE, EVENT_KEYS, parseBreakdown, RESOLVED_ENV_CTE, type Breakdown } from '../dimensions.js';
import { DAY_MS, HOUR_MS, isLocalMidnight, isoDay, localDate, onOrBefore, plusDays, zonedMidnight, type Ymd } from '../scope.js';
import { localActorDays, monthBucketMask, UTC_ZONES, wholeHourDays } from './actor-days.js';
import { bucketIndex, bucketLabels, bucketStart, type BucketIndex } from './buckets.js';
import { eachBit } from './month-terms.js';
import { eachChunk, readWith, type ReadOptions } from './chunks.js';
import {
  ACTOR,
  bucketOf,
  checkBuckets,
  FilterProps,
  head,
  label,
  previousPeriod,
  rawEvents,
  resolveFilters,
  usageDaysWhere,
  type Filters,
  type Principal,
} from '../filters.js';
import { Params } from '../params.js';
import { requireAccountAnswers } from '../guard.js';

// Trends: event counts and unique actors per interval, with at most one breakdown, its top N
// values and "other" (PostHog's trends with math total and dau, breakdown_limit and the "other"
// aggregation). Exact either way: from the read model when it keeps what the request asks
// (readModelRows), else from raw events in the time zone's own buckets.

export const TrendsQuery = Type.Object({
  ...FilterProps,
  breakdown: Type.Optional(Type.String({ minLength: 1, maxLength: 80, description: BREAKDOWN_DESCRIPTION })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'breakdown values shown; the rest are summed into one "other" series' }),
  ),
});
export type TrendsParams = Static<typeof TrendsQuery>;

type Source = 'read_model' | 'events';

export interface Point {
  date: string;
  events: number;
  actors: number;
}
export interface Series {
  breakdown_value: string | null;
  other: boolean;
  total: { events: number; actors: number };
  data: Point[];
}

type Row = { date: string | null; k: string | null; o: boolean; events: string; actors: string };

/**
 * The rows of one period from the read model, or undefined when it cannot answer exactly. It keeps
 * events per UTC hour (rm_event_hours), per account and license per UTC day (rm_usage_days), and
 * each actor's active UTC hours per day (rm_actor_days); so: no category, name, version or property
 * filter and a breakdown by account, license or nothing (unique actors per name or version are
 * not kept), a whole-hour zone, bounds on whole hours (a range ending now counts its current hour
 * whole), and for accounts and licenses UTC days.
 */
async function readModelRows(q: Queryable, f: Filters, b: Breakdown | undefined, limit: number, toNow: boolean): Promise<Row[] | undefined> {
  const s = f.scope;
  if (f.category !== undefined || f.name !== undefined || s.version !== undefined || f.properties.length > 0 || f.segment) return undefined;
  if (b && !b.account) return undefined;
  const perAccount = b?.account || s.accountId !== undefined || s.licenseId !== undefined;
  // Accounts and licenses are kept per UTC day, everything else per UTC hour: the bounds must fall on them.
  const grain = perAccount ? DAY_MS : HOUR_MS;
  if (perAccount && (!UTC_ZONES.has(s.tz) || s.interval === 'hour')) return undefined;
  let to = toNow ? new Date(Math.ceil(s.to.getTime() / grain) * grain) : s.to;
  // A period that ends inside a local day (the previous period of a range that ends now ends at
  // the same time of day): its whole days from the read model, the day it ends in from raw events,
  // from that day's midnight (`tail`) to the end; the two meet per actor below, so no actor counts twice.
  let tail: Date | undefined;
  if (!toNow && s.interval !== 'hour') {
    const end = localDate(s.to, s.tz);
    const midnight = zonedMidnight(end.y, end.m, end.d, s.tz);
    if (midnight > s.from && midnight < s.to) [tail, to] = [midnight, midnight];
  }
  if (s.from.getTime() % grain !== 0 || to.getTime() % grain !== 0) return undefined;
  const first = localDate(s.from, s.tz);
  const last = localDate(new Date(to.getTime() - 1), s.tz);
  const lastBucketDay = tail ? localDate(new Date(s.to.getTime() - 1), s.tz) : last;
  if (!wholeHourDays(s.tz, first, lastBucketDay)) return undefined;
  // Actors per day, week or month come from local days: the bounds must be local midnights.
  if (s.interval !== 'hour' && !(isLocalMidnight(s.from, s.tz) && (toNow || isLocalMidnight(to, s.tz)))) return undefined;

  const sql = new Params();
  const tz = () => sql.add(s.tz);
  const i = s.interval;
  const column = b ? (b.expr === EVENT_KEYS.account ? 'account_id' : 'license_id') : undefined;
  const key = column ? `nullif(${column}, '')` : 'NULL::text';
  let events: string;
  if (perAccount) {
    events = `SELECT date_trunc('${i}', day::timestamp) AS b, ${key} AS k, sum(events) AS n FROM rm_usage_days WHERE ${usageDaysWhere(s, sql, to).join(' AND ')} GROUP BY 1, 2 HAVING sum(events) <> 0`;
  } else {
    const w = [`tenant_id = ${sql.add(s.tenantId)}`, `hour >= ${sql.add(s.from)}`, `hour < ${sql.add(to)}`];
    if (s.productId) w.push(`product_id = ${sql.add(s.productId)}`);
    events = `SELECT date_trunc('${i}', hour AT TIME ZONE ${tz()}) AS b, NULL::text AS k, sum(events) AS n FROM rm_event_hours WHERE ${w.join(' AND ')} GROUP BY 1`;
  }
  const k = column ? `nullif(a.${column}, '')` : 'NULL::text';
  const index = i === 'hour' ? undefined : bucketIndex(i, first, lastBucketDay, sql);
  if (tail && !index) return undefined;
  // The tail's events per bucket and its (key, actor) bucket masks, from raw events read once, added to the read model's.
  let tailMasks = '';
  let tailRows: string | undefined;
  if (tail && index) {
    const rawKey = column ? `nullif(e.${column}, '')` : 'NULL::text';
    tailRows = `t AS MATERIALIZED (${rawEvents({ ...f, scope: { ...s, from: tail, to: s.to } }, sql, `e.occurred_at AS at, ${rawKey} AS k, ${ACTOR} AS actor_id`)})`;
    const local = `(t.at AT TIME ZONE ${tz()})`;
    events += ` UNION ALL SELECT date_trunc('${i}', ${local}), k, count(*) FROM t GROUP BY 1, 2`;
    tailMasks = ` UNION ALL SELECT k, actor_id, bit_or(1::bigint << ${index.of(`${local}::date`)}) FROM t GROUP BY 1, 2`;
  }
  if (index) {
    // From the month rows (one per actor and month), each row's buckets as one mask; else the actor days.
    const bucketOf = bucketNumbers(first, lastBucketDay, i as 'day' | 'week' | 'month');
    const months = monthBucketMask(f, sql, first, last, bucketOf);
    if (months) {
      const masks = `SELECT ${k} AS k, a.actor_id, bit_or(${months.mask}) AS mask FROM ${months.from} GROUP BY 1, 2${tailMasks}`;
      return rankedRows(q, s, sql, b, limit, events, maskCounts(masks, b, index), tailRows);
    }
    const days = localActorDays(f, sql, first, last, `${index.of('a.lday')} AS i, ${k} AS k, a.actor_id`);
    return rankedRows(
      q,
      s,
      sql,
      b,
      limit,
      events,
      maskCounts(`SELECT k, actor_id, bit_or(1::bigint << i) AS mask FROM (${days}) d GROUP BY k, actor_id${tailMasks}`, b, index),
      tailRows,
    );
  }
  const actors =
    i === 'hour'
      ? `SELECT date_trunc('hour', x.at AT TIME ZONE ${tz()}) AS b, ${key} AS k, a.actor_id FROM rm_actor_days a
           CROSS JOIN generate_series(0, 23) h CROSS JOIN LATERAL (SELECT (a.day + make_interval(hours => h)) AT TIME ZONE 'UTC' AS at) x
          WHERE ${[
            `a.tenant_id = ${sql.add(s.tenantId)}`,
            'a.events > 0',
            `a.day >= ${sql.add(s.from.toISOString().slice(0, 10))}::date`,
            `a.day <= ${sql.add(new Date(to.getTime() - 1).toISOString().slice(0, 10))}::date`,
            ...(s.productId ? [`a.product_id = ${sql.add(s.productId)}`] : []),
            `a.hours & (1 << h) <> 0`,
            `x.at >= ${sql.add(s.from)}`,
            `x.at < ${sql.add(to)}`,
          ].join(' AND ')}`
      : localActorDays(f, sql, first, last, `date_trunc('${i}', a.lday::timestamp) AS b, ${k} AS k, a.actor_id`);
  // Distinct actors by hashing, per bucket and over the range: a sort-based count(DISTINCT) under
  // GROUPING SETS sorts every actor day, spilling past work_mem.
  return rankedRows(q, s, sql, b, limit, events, {
    cte: `a AS MATERIALIZED (
       SELECT DISTINCT b, o, CASE WHEN o THEN NULL ELSE k END AS k, actor_id
         FROM (SELECT ac.b, ac.actor_id, ac.k, ${otherOf(b, 'ac')} AS o FROM (${actors}) ac) x)`,
    actorRows: `SELECT b, o, k, 0, count(*) FROM a GROUP BY b, o, k
     UNION ALL
     SELECT NULL, o, k, 0, count(*) FROM (SELECT DISTINCT o, k, actor_id FROM a) r GROUP BY o, k`,
  });
}

/**
 * Whether a row of key k (in CTE `alias`) falls in "other": not among the top values (always false
 * without a breakdown). The top values are one array, built once; array_position compares as IS
 * NOT DISTINCT FROM, so a null value can be a top value. A subquery on `top` per row cost 0.87 s
 * over the 551k (version, actor) rows of a 30-day breakdown by version on bench:queries.
 */
const otherOf = (b: Breakdown | undefined, alias: string) => (b ? `array_position(ARRAY(SELECT k FROM top), ${alias}.k) IS NULL` : 'false');

interface ActorPart {
  /** CTEs (after ev, top, e) that the actor rows read. */
  cte: string;
  /** Rows (b, o, k, 0, actors): per bucket, and with b NULL over the range. */
  actorRows: string;
}

/**
 * The answer's rows from the events per (bucket b, key k) (`events`: b, k, n) and the actor rows:
 * the breakdown's top `limit` values by events, the rest summed into "other". `source` is a CTE
 * both may read.
 */
function rankedRows(
  q: Queryable,
  s: Filters['scope'],
  sql: Params,
  b: Breakdown | undefined,
  limit: number,
  events: string,
  actors: ActorPart,
  source?: string,
): Promise<Row[]> {
  return q.query<Row>(
    `WITH ${source ? `${source},` : ''} ev AS MATERIALIZED (${events}),
     top AS (SELECT k FROM ev GROUP BY k ORDER BY sum(n) DESC, k NULLS LAST LIMIT ${sql.add(limit)}),
     e AS (SELECT b, n, ${otherOf(b, 'ev')} AS o, k FROM ev),
     ${actors.cte},
     u AS (SELECT b, o, CASE WHEN o THEN NULL ELSE k END AS k, sum(n) AS events, 0 AS actors FROM e
             GROUP BY GROUPING SETS ((o, CASE WHEN o THEN NULL ELSE k END, b), (o, CASE WHEN o THEN NULL ELSE k END))
           UNION ALL ${actors.actorRows})
     SELECT ${label('b', s)} AS date, k, o, sum(events) AS events, sum(actors) AS actors FROM u GROUP BY b, o, k`,
    sql.values,
  );
}

/**
 * Unique actors from each (key, actor)'s buckets as the bits of one bigint (`masks`: k, actor_id,
 * mask; up to 63 buckets): one hash aggregate by actor, not by actor and bucket. Actors with the
 * same bits are counted together, so a bucket's count adds up a few masks and the range's is the
 * number of actors.
 */
function maskCounts(masks: string, b: Breakdown | undefined, index: BucketIndex): ActorPart {
  return {
    cte: `m AS (${masks}),
       mo AS (SELECT o, CASE WHEN o THEN NULL ELSE k END AS k, actor_id, bit_or(mask) AS mask FROM (SELECT m.*, ${otherOf(b, 'm')} AS o FROM m) x GROUP BY 1, 2, 3),
       c AS (SELECT o, k, mask, count(*) AS n FROM mo GROUP BY o, k, mask)`,
    actorRows: `SELECT ${index.bucket('(t.i - 1)::int')}, x.o, x.k, 0, t.n FROM (SELECT o, k, ${index.sums('mask', 'n')} AS a FROM c GROUP BY o, k) x
         CROSS JOIN LATERAL unnest(x.a) WITH ORDINALITY t(n, i) WHERE t.n IS NOT NULL
       UNION ALL
       SELECT NULL, o, k, 0, sum(n) FROM c GROUP BY o, k`,
  };
}

/** The series of one period: per breakdown value (top N by events, then "other"), every bucket filled. */
async function series(
  q: Queryable,
  f: Filters,
  b: Breakdown | undefined,
  limit: number,
  toNow: boolean,
  read: Required<ReadOptions>,
): Promise<{ source: Source; series: Series[] }> {
  const s = f.scope;
  if (s.empty) return { source: 'read_model', series: [] };
  const fromReadModel = await readModelRows(q, f, b, limit, toNow);
  const rows = fromReadModel ?? (await rawRows(q, f, b, limit, read));
  return { source: fromReadModel ? 'read_model' : 'events', series: await assemble(q, f, b, rows) };
}

/** A breakdown's value of a raw event (alias e): a property, an environment field of the actor after identify (envCte), or a column. */
const breakdownKey = (b: Breakdown | undefined, sql: Params) =>
  !b ? 'NULL::text' : b.propertyKey !== undefined ? `e.properties ->> ${sql.add(b.propertyKey)}` : b.env ? ENV_VALUE : b.expr;
/** The environment CTE an environment breakdown reads (its field per actor, as /v1/environment reads it), with its comma; else nothing. */
const envCte = (b: Breakdown | undefined, s: Filters['scope'], sql: Params) => (b?.env ? `${RESOLVED_ENV_CTE(sql.add(s.tenantId), b.expr)},` : '');

/**
 * The rows from raw events, in the time zone's own buckets. Up to 63 buckets, the events per
 * (bucket, key) and each (key, actor)'s bucket mask (maskCounts); past that (or per hour), distinct
 * actors per bucket by count(DISTINCT).
 */
async function rawRows(q: Queryable, f: Filters, b: Breakdown | undefined, limit: number, read: Required<ReadOptions>): Promise<Row[]> {
  if (read.chunkRows > 0) return chunkedRows(q, f, b, limit, read);
  const s = f.scope;
  const sql = new Params();
  const key = breakdownKey(b, sql);
  const join = b?.env ? ENV_JOIN : '';
  const index = s.interval === 'hour' ? undefined : bucketIndex(s.interval, localDate(s.from, s.tz), localDate(new Date(s.to.getTime() - 1), s.tz), sql);
  if (index) {
    const i = index.of(`(e.occurred_at AT TIME ZONE ${sql.add(s.tz)})::date`);
    const env = envCte(b, s, sql);
    // Two hash aggregates over the events read once: a single one with grouping sets sorted them all for one of its sets.
    return rankedRows(
      q,
      s,
      sql,
      b,
      limit,
      `SELECT ${index.bucket('i')} AS b, k, count(*) AS n FROM r GROUP BY i, k`,
      maskCounts(`SELECT k, actor AS actor_id, bit_or(1::bigint << i) AS mask FROM r GROUP BY k, actor`, b, index),
      `${env} r AS MATERIALIZED (${rawEvents(f, sql, `${i} AS i, ${key} AS k, ${ACTOR} AS actor`, join)})`,
    );
  }
  return q.query<Row>(
    `WITH ${envCte(b, s, sql)}
     ev AS MATERIALIZED (${rawEvents(f, sql, `${bucketOf('e.occurred_at', sql, s)} AS b, ${key} AS k, ${ACTOR} AS actor`, join)}),
     top AS (SELECT k FROM ev GROUP BY k ORDER BY count(*) DESC, k NULLS LAST LIMIT ${sql.add(limit)}),
     m AS (SELECT b, actor, ${otherOf(b, 'ev')} AS o, ev.k FROM ev)
     SELECT ${label('b', s)} AS date, CASE WHEN o THEN NULL ELSE k END AS k, o, count(*) AS events, count(DISTINCT actor) AS actors
       FROM m GROUP BY GROUPING SETS ((o, CASE WHEN o THEN NULL ELSE k END, b), (o, CASE WHEN o THEN NULL ELSE k END))`,
    sql.values,
  );
}

/**
 * rawRows' answer read in chunks of `chunkRows` events (chunks.ts), one statement each, merged
 * exactly here. Each chunk answers its events per (bucket, key) and, per (key, actor), the
 * buckets it was seen in (a bit mask up to 63 buckets, else one row per bucket); counts add up
 * across chunks and each (key, actor)'s buckets are the union of its chunks'. The top values rank
 * the keys by their summed events in SQL (its collation orders ties, as rawRows' does), and
 * "other" is the union of the other keys' actors; so every count is the one statement's.
 */
async function chunkedRows(q: Queryable, f: Filters, b: Breakdown | undefined, limit: number, read: Required<ReadOptions>): Promise<Row[]> {
  const { maxCells } = read;
  const s = f.scope;
  const [first, last] = [localDate(s.from, s.tz), localDate(new Date(s.to.getTime() - 1), s.tz)];
  const masked = s.interval !== 'hour' && bucketIndex(s.interval, first, last, new Params()) !== undefined;
  // A bucket is a position: up to 63 buckets, bucketIndex's number, its label from the chunks' rows;
  // else its label's place among the range's labels (one more for a label none names: none should).
  const labels = masked ? [] : await bucketLabels(q, f);
  const at = new Map(labels.map((l, n) => [l, n]));
  const labelOf: (string | undefined)[] = [...labels];
  // Memory follows what the chunks hold, never keys × buckets: events per (key, bucket) sparse; each
  // (key, actor)'s buckets a two-word mask (up to 63 buckets) or a set of positions (hours, or more
  // than 63 buckets). Past `maxCells` of them (READ_CHUNK_MAX_CELLS) the answer would need too much of the server's memory
  // (on the embedded store the database's too): a 422 query_too_large, as too many buckets is.
  let cells = 0;
  const grow = () => {
    if (++cells > maxCells)
      throw queryTooLarge('too many distinct (breakdown value, actor, bucket) combinations: narrow the range, widen the interval or add a filter');
  };
  const events = new Map<string | null, Map<number, number>>();
  const actors = new Map<string | null, Map<string, Buckets>>();
  const seen = (k: string | null, actor: string) => {
    let byActor = actors.get(k);
    if (!byActor) actors.set(k, (byActor = new Map()));
    let mask = byActor.get(actor);
    if (!mask) {
      byActor.set(actor, (mask = masked ? new Uint32Array(2) : new Set<number>()));
      grow();
    }
    return mask;
  };
  const counted = (k: string | null, n: number, add: number) => {
    let perBucket = events.get(k);
    if (!perBucket) events.set(k, (perBucket = new Map()));
    if (!perBucket.has(n)) grow();
    perBucket.set(n, (perBucket.get(n) ?? 0) + add);
  };
  const position = (d: string) => (masked ? Number(d) : (at.get(d) ?? labels.length));
  type ChunkRow = { t: number | null; d: string | null; k: string | null; n: number | null; actor: string | null; mask: string | null };
  await eachChunk<ChunkRow>(
    q,
    f,
    read,
    (sql) => {
      const key = breakdownKey(b, sql);
      const env = envCte(b, s, sql);
      const join = b?.env ? ENV_JOIN : '';
      if (masked) {
        const index = bucketIndex(s.interval as 'day' | 'week' | 'month', first, last, sql)!;
        const i = index.of(`(e.occurred_at AT TIME ZONE ${sql.add(s.tz)})::date`);
        // t 0: events per (bucket, key); 1: each (key, actor)'s buckets as a mask; 2: each bucket number's label.
        return {
          ctes: `${env} r AS MATERIALIZED (${rawEvents(f, sql, `${i} AS i, ${key} AS k, ${ACTOR} AS actor`, join, 'c')}),`,
          select: `SELECT 0 AS t, i::text AS d, k, count(*)::int AS n, NULL::text AS actor, NULL::text AS mask FROM r GROUP BY i, k
             UNION ALL SELECT 1, NULL, k, NULL, actor, bit_or(1::bigint << i)::text FROM r GROUP BY k, actor
             UNION ALL SELECT 2, ${label(index.bucket('i'), s)}, NULL, i, NULL, NULL FROM (SELECT DISTINCT i FROM r) x`,
        };
      }
      // t 0: events per (bucket, key); 1: each (bucket, key, actor).
      return {
        ctes: `${env} r AS MATERIALIZED (${rawEvents(f, sql, `${label(bucketOf('e.occurred_at', sql, s), s)} AS d, ${key} AS k, ${ACTOR} AS actor`, join, 'c')}),`,
        select: `SELECT 0 AS t, d, k, count(*)::int AS n, NULL::text AS actor, NULL::text AS mask FROM r GROUP BY d, k
           UNION ALL SELECT 1, d, k, NULL, actor, NULL FROM r GROUP BY d, k, actor`,
      };
    },
    (rows) => {
      for (const r of rows) {
        if (r.t === null) continue;
        const t = Number(r.t);
        if (t === 0) counted(r.k, position(r.d!), Number(r.n));
        else if (t === 2) labelOf[Number(r.n)] = r.d!;
        else if (masked) {
          // Up to 63 buckets: the mask's low and high 32 bits.
          const m = BigInt(r.mask!);
          const mask = seen(r.k, r.actor!) as Uint32Array;
          mask[0]! |= Number(m & 0xffffffffn);
          mask[1]! |= Number(m >> 32n);
        } else {
          const positions = seen(r.k, r.actor!) as Set<number>;
          const n = position(r.d!);
          if (!positions.has(n)) {
            positions.add(n);
            grow();
          }
        }
      }
    },
  );

  const keys = [...events.keys()];
  const total = (k: string | null) => sum(events.get(k)!.values());
  let top: Set<string | null>;
  if (!b || keys.length <= limit) top = new Set(keys);
  else {
    // The ranking in SQL: its ORDER BY k orders ties in the database's collation, as rawRows' does.
    const sql = new Params();
    const ranked = await q.query<{ k: string | null }>(
      `SELECT k FROM unnest(${sql.add(keys)}::text[], ${sql.add(keys.map(total))}::bigint[]) AS t(k, n) ORDER BY n DESC, k NULLS LAST LIMIT ${sql.add(limit)}`,
      sql.values,
    );
    top = new Set(ranked.map((r) => r.k));
  }

  // The series: each top key's own counts, and "other" the sum of the rest, its actors a union.
  const groups: { k: string | null; o: boolean; events: Map<number, number>; actors: Map<string, Buckets> }[] = [];
  let other: (typeof groups)[number] | undefined;
  for (const k of keys) {
    const byActor = actors.get(k) ?? new Map<string, Buckets>();
    if (top.has(k)) {
      groups.push({ k, o: false, events: events.get(k)!, actors: byActor });
      continue;
    }
    if (!other) groups.push((other = { k: null, o: true, events: new Map(), actors: new Map() }));
    for (const [p, n] of events.get(k)!) other.events.set(p, (other.events.get(p) ?? 0) + n);
    for (const [actor, mask] of byActor) {
      const union = other.actors.get(actor);
      if (!union) other.actors.set(actor, mask instanceof Set ? new Set(mask) : Uint32Array.from(mask));
      else if (mask instanceof Set) for (const p of mask) (union as Set<number>).add(p);
      else mask.forEach((w, i) => ((union as Uint32Array)[i]! |= w));
    }
  }
  // Rows as rawRows answers them: a total per series, and a point per bucket with events (assemble keeps the range's labels).
  const rows: Row[] = [];
  for (const g of groups) {
    const perBucket = new Map<number, number>();
    const one = (p: number) => perBucket.set(p, (perBucket.get(p) ?? 0) + 1);
    for (const mask of g.actors.values()) {
      if (mask instanceof Set) mask.forEach(one);
      else mask.forEach((w, i) => eachBit(w, (bit) => one(i * 32 + bit)));
    }
    rows.push({ date: null, k: g.k, o: g.o, events: String(sum(g.events.values())), actors: String(g.actors.size) });
    for (const [p, n] of [...g.events].sort((x, y) => x[0] - y[0])) {
      const date = labelOf[p];
      if (n > 0 && date !== undefined) rows.push({ date, k: g.k, o: g.o, events: String(n), actors: String(perBucket.get(p) ?? 0) });
    }
  }
  return rows;
}

/** A (key, actor)'s buckets in chunkedRows: a mask of up to 63 bucket numbers (two 32-bit words), or a set of positions. */
type Buckets = Uint32Array | Set<number>;

const sum = (xs: Iterable<number>) => {
  let n = 0;
  for (const x of xs) n += x;
  return n;
};

async function assemble(q: Queryable, f: Filters, b: Breakdown | undefined, rows: Row[]): Promise<Series[]> {
  const labels = await bucketLabels(q, f);
  const byKey = new Map<string, Series>();
  // A label's point (its first, as a search would find), without a search per row.
  const at = new Map<string, number>();
  labels.forEach((date, k) => at.has(date) || at.set(date, k));
  for (const r of rows) {
    const id = JSON.stringify([r.o, r.k]);
    let one = byKey.get(id);
    if (!one)
      byKey.set(
        id,
        (one = { breakdown_value: r.k, other: r.o, total: { events: 0, actors: 0 }, data: labels.map((date) => ({ date, events: 0, actors: 0 })) }),
      );
    const counts = { events: Number(r.events), actors: Number(r.actors) };
    if (r.date === null) one.total = counts;
    else {
      const k = at.get(r.date);
      if (k !== undefined) Object.assign(one.data[k]!, counts);
    }
  }
  if (!b && byKey.size === 0)
    byKey.set('none', { breakdown_value: null, other: false, total: { events: 0, actors: 0 }, data: labels.map((date) => ({ date, events: 0, actors: 0 })) });
  return [...byKey.values()].sort(
    (x, y) => Number(x.other) - Number(y.other) || y.total.events - x.total.events || String(x.breakdown_value).localeCompare(String(y.breakdown_value)),
  );
}

export async function trends(q: Queryable, principal: Principal, p: TrendsParams, now: Date, opts: ReadOptions = {}) {
  const read = readWith(opts);
  const b = parseBreakdown(p.breakdown);
  if (b?.account) requireAccountAnswers(principal);
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  const limit = p.limit ?? 10;
  // A range that ends now (no `to`) may count its current hour whole: nothing has happened after now.
  const toNow = p.to === undefined;
  // The two periods of a comparison go out together (on a PostgreSQL server each on connections of
  // its own); read in chunks (the embedded store: one connection), one after the other, so that
  // each keeps its own time budget.
  const prev = f.compare ? previousPeriod(f) : undefined;
  const current = () => series(q, f, b, limit, toNow, read);
  const previous = () => prev && series(q, prev, b, limit, false, read);
  const [now_, before] = read.chunkRows > 0 ? [await current(), await previous()] : await Promise.all([current(), previous()]);
  const answer = { ...(await head(q, f.scope)), breakdown: p.breakdown ?? null, source: now_.source, series: now_.series };
  if (!prev || !before) return answer;
  return { ...answer, compare: { range: { from: prev.scope.from.toISOString(), to: prev.scope.to.toISOString() }, series: before.series } };
}

/** Local day g (from `first`) → its bucket's number (0: the bucket of `first`), as bucketIndex numbers them. */
function bucketNumbers(first: Ymd, last: Ymd, i: 'day' | 'week' | 'month'): (g: number) => number {
  const numbers: number[] = [];
  let bucket = '';
  for (let d = first; onOrBefore(d, last); d = plusDays(d, 1)) {
    const start = bucketStart(isoDay(d), i);
    numbers.push(start === bucket ? numbers.at(-1)! : numbers.length === 0 ? 0 : numbers.at(-1)! + 1);
    bucket = start;
  }
  return (g) => numbers[g]!;
}
