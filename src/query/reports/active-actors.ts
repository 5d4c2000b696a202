import { setImmediate } from 'node:timers/promises';
import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { checkBuckets, FilterProps, resolveFilters, withCompare, type Filters, type Principal } from '../filters.js';
import { DAY_MS } from '../scope.js';
import { actorDays, localActorMonths } from './actor-days.js';
import { bucketStart, eachWordBit, WORD_DAYS as WORD, wordsText } from './buckets.js';
import { Params } from '../params.js';
import { sliceEnds } from '../slices.js';

// Active actors (docs/reports.md): distinct actors per interval; DAU, WAU and MAU per day, rolling
// (the 1, 7 and 30 local days ending that day) and exact; stickiness (DAU/MAU, and how many days
// an actor is active per week or month); lifecycle per interval as PostHog defines it: new (first
// seen ever in that interval), returning (active in the previous one too), resurrecting (not),
// dormant (active in the previous interval, not in this one).

export const ActiveActorsQuery = Type.Object(FilterProps);
export type ActiveActorsParams = Static<typeof ActiveActorsQuery>;

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);

/** Days per 64-bit word of an actor's mask (bit 63, the sign, unused). */
type Interval = 'day' | 'week' | 'month';
const ms = (day: string) => Date.parse(`${day}T00:00:00Z`);
const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
const ymd = (day: string) => ({ y: Number(day.slice(0, 4)), m: Number(day.slice(5, 7)), d: Number(day.slice(8, 10)) });

/**
 * One hash aggregate by actor makes each actor's active days a bit mask (63 days per bigint word,
 * from the first day the rolling windows reach back to); actors with the same days and the same
 * first-seen bucket come back as one row with their number. Every figure is then counted here from
 * those rows: DAU, WAU and MAU on each day (any active day in the 1, 7 or 30 days ending on it),
 * active actors and days active per bucket, and lifecycle (new: first seen in the bucket; returning:
 * active in the previous bucket too; resurrecting: not; dormant: active in the previous bucket, not
 * in this one). A sort of every (actor, day) pair by window functions took seconds on the
 * embedded store at 1M events.
 */
async function period(q: Queryable, f: Filters) {
  const s = f.scope;
  let sql = new Params();
  const ad = actorDays(f, sql);
  const i = s.interval as Interval;
  const back = ms(ad.backDay);
  const span = (ms(ad.lastDay) - back) / DAY_MS + 1;
  const from = (ms(ad.firstDay) - back) / DAY_MS;
  const words = Array.from({ length: Math.ceil(span / WORD) }, (_, w) => w);
  // From the month rows when the read model answers (one row per actor and month, not per day:
  // 3.7 times fewer rows into the aggregate by actor at bench:queries' density), else from the
  // (day, actor) pairs. Every parameter must be used, so the pairs' SQL is built again for them.
  const monthSql = new Params();
  const months = ad.source === 'read_model' ? localActorMonths(f, monthSql, ymd(ad.backDay), ymd(ad.lastDay), words.length) : undefined;
  let m: string;
  if (months) {
    sql = monthSql;
    m = `SELECT a.actor_id AS actor, ${months.words.map((x, w) => `bit_or(${x}) AS w${w}`).join(', ')} FROM ${months.from} GROUP BY a.actor_id`;
  } else {
    const off = `(day - ${sql.add(ad.backDay)}::date)`;
    m = `SELECT actor, ${words.map((w) => `bit_or(CASE WHEN ${off} / ${WORD} = ${w} THEN 1::bigint << (${off} % ${WORD}) ELSE 0 END) AS w${w}`).join(', ')}
         FROM (${ad.sql}) ad GROUP BY actor`;
  }
  const rows = await q.query<{ w: string; first: string | null; n: string }>(
    `WITH m AS (${m})
     SELECT ${wordsText('m', words.length)} AS w,
            to_char(date_trunc('${i}', f.first_seen AT TIME ZONE ${sql.add(s.tz)}), 'YYYY-MM-DD') AS first, count(*) AS n
       FROM m LEFT JOIN rm_actor_first f ON f.tenant_id = ${sql.add(s.tenantId)} AND f.actor_id = m.actor
      GROUP BY 1, 2`,
    sql.values,
  );

  const days = Array.from({ length: span }, (_, d) => iso(back + d * DAY_MS));
  // Every bucket the span touches, in order (the range's are the last ones), and each day's.
  const labels: string[] = [];
  const dayBucket = new Int32Array(span);
  days.forEach((day, d) => {
    const b = bucketStart(day, i);
    if (labels.at(-1) !== b) labels.push(b);
    dayBucket[d] = labels.length - 1;
  });
  const firstBucket = labels.indexOf(bucketStart(ad.firstDay, i));
  const rank = new Map(labels.map((b, k) => [b, k]));
  // A first-seen bucket before the span ranks before every bucket, one after it after every bucket.
  const rankOf = (b: string) => rank.get(b) ?? (b < labels[0]! ? -1 : labels.length);
  const roll = { dau: new Float64Array(span), wau: new Float64Array(span), mau: new Float64Array(span) };
  const active = new Float64Array(labels.length);
  const life = labels.map(() => ({ new: 0, returning: 0, resurrecting: 0, dormant: 0 }));
  const daysActive = new Map<number, number>();
  const on = new Uint8Array(span);
  const inBucket = new Uint8Array(labels.length); // active in the bucket (the days before the range too, for lifecycle)
  const within = new Int32Array(labels.length); // active days in the bucket within the range
  for (let row = 0; row < rows.length; row++) {
    // The event loop served between slices of rows: a row per distinct (days, first seen), up to
    // one per active actor, each a pass over the span (~2 s for 300k rows over a year).
    if (sliceEnds(row)) await setImmediate();
    const r = rows[row]!;
    const n = Number(r.n);
    on.fill(0);
    eachWordBit(r.w, (d) => (on[d] = 1));
    inBucket.fill(0);
    within.fill(0);
    // One pass over the days: the last active day so far decides the rolling windows.
    let last = -Infinity;
    for (let d = 0; d < span; d++) {
      if (on[d]) {
        last = d;
        inBucket[dayBucket[d]!] = 1;
        if (d >= from) within[dayBucket[d]!]!++;
      }
      if (d < from || d - last >= 30) continue;
      roll.mau[d]! += n;
      if (d - last < 7) roll.wau[d]! += n;
      if (d === last) roll.dau[d]! += n;
    }
    let total = 0;
    for (let k = firstBucket; k < labels.length; k++) {
      if (within[k]! > 0) {
        active[k]! += n;
        total += within[k]!;
        // Days active per actor and bucket; with interval day, per actor over the range (below).
        if (i !== 'day') daysActive.set(within[k]!, (daysActive.get(within[k]!) ?? 0) + n);
      }
    }
    if (i === 'day' && total > 0) daysActive.set(total, (daysActive.get(total) ?? 0) + n);
    const first = r.first === null ? inBucket.indexOf(1) : rankOf(r.first);
    for (let k = firstBucket; k < labels.length; k++) {
      const now = inBucket[k] === 1;
      const before = k > 0 && inBucket[k - 1] === 1;
      if (now && first === k) life[k]!.new += n;
      else if (now && first < k) life[k]![before ? 'returning' : 'resurrecting'] += n;
      else if (!now && before) life[k]!.dormant += n;
    }
  }
  const buckets = labels.slice(firstBucket);

  const rolling = days.slice(from).map((date, k) => ({
    date,
    dau: roll.dau[from + k]!,
    wau: roll.wau[from + k]!,
    mau: roll.mau[from + k]!,
    dau_mau: ratio(roll.dau[from + k]!, roll.mau[from + k]!),
  }));
  const withMau = rolling.filter((r) => r.mau > 0);
  return {
    source: ad.source,
    data: buckets.map((date, k) => ({ date, active: active[firstBucket + k]! })),
    rolling,
    lifecycle: buckets.map((date, k) => ({ date, ...life[firstBucket + k]! })),
    stickiness: {
      dau_mau: withMau.length === 0 ? 0 : Math.round((withMau.reduce((a, r) => a + r.dau / r.mau, 0) / withMau.length) * 10_000) / 10_000,
      days_active: [...daysActive].sort((x, y) => x[0] - y[0]).map(([days, actors]) => ({ days, actors })),
    },
  };
}

const empty = { source: 'read_model' as const, data: [], rolling: [], lifecycle: [], stickiness: { dau_mau: 0, days_active: [] } };

export async function activeActors(q: Queryable, principal: Principal, p: ActiveActorsParams, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  checkBuckets(f.scope);
  return withCompare(q, f, true, (g) => (g.scope.empty ? Promise.resolve(empty) : period(q, g)));
}
