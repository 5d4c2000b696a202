import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { checkBuckets, FilterProps, head, Params, previousPeriod, resolveFilters, type Filters, type Principal } from '../filters.js';
import { actorDays } from './actor-days.js';

// Active actors (docs/reports.md): distinct actors per interval; DAU, WAU and MAU per day, rolling
// (the 1, 7 and 30 local days ending that day) and exact; stickiness (DAU/MAU, and how many days
// an actor is active per week or month); lifecycle per interval as PostHog defines it: new (first
// seen ever in that interval), returning (active in the previous one too), resurrecting (not),
// dormant (active in the previous interval, not in this one).

export const ActiveActorsQuery = Type.Object(FilterProps);
export type ActiveActorsParams = Static<typeof ActiveActorsQuery>;

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);

const DAY_MS = 86_400_000;
/** Days per 64-bit word of an actor's mask (bit 63, the sign, unused). */
const WORD = 63;
type Interval = 'day' | 'week' | 'month';
const ms = (day: string) => Date.parse(`${day}T00:00:00Z`);
const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
/** The bucket (its first day) a local day falls in: PostgreSQL's date_trunc, weeks from Monday. */
function bucketOf(day: string, i: Interval): string {
  if (i === 'day') return day;
  if (i === 'month') return `${day.slice(0, 8)}01`;
  return iso(ms(day) - ((new Date(ms(day)).getUTCDay() + 6) % 7) * DAY_MS);
}
function shift(bucket: string, i: Interval, n: number): string {
  if (i !== 'month') return iso(ms(bucket) + n * (i === 'day' ? 1 : 7) * DAY_MS);
  const d = new Date(ms(bucket));
  return iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1));
}

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
  const sql = new Params();
  const ad = actorDays(f, sql);
  const i = s.interval as Interval;
  const back = ms(ad.backDay);
  const span = (ms(ad.lastDay) - back) / DAY_MS + 1;
  const from = (ms(ad.firstDay) - back) / DAY_MS;
  const b0 = sql.p(ad.backDay);
  const off = `(day - ${b0}::date)`;
  const words = Array.from({ length: Math.ceil(span / WORD) }, (_, w) => w);
  const rows = await q.query<{ w: string; first: string | null; n: string }>(
    `WITH m AS (
       SELECT actor, ${words.map((w) => `bit_or(CASE WHEN ${off} / ${WORD} = ${w} THEN 1::bigint << (${off} % ${WORD}) ELSE 0 END) AS w${w}`).join(', ')}
         FROM (${ad.sql}) ad GROUP BY actor)
     SELECT concat_ws(',', ${words.map((w) => `m.w${w}::text`).join(', ')}) AS w,
            to_char(date_trunc('${i}', f.first_seen AT TIME ZONE ${sql.p(s.tz)}), 'YYYY-MM-DD') AS first, count(*) AS n
       FROM m LEFT JOIN rm_actor_first f ON f.tenant_id = ${sql.p(s.tenantId)} AND f.actor_id = m.actor
      GROUP BY 1, 2`,
    sql.values,
  );

  const days = Array.from({ length: span }, (_, d) => iso(back + d * DAY_MS));
  const bucketOfDay = days.map((d) => bucketOf(d, i));
  const buckets: string[] = [];
  for (let b = bucketOf(ad.firstDay, i); b <= ad.lastDay; b = shift(b, i, 1)) buckets.push(b);
  const roll = { dau: new Array<number>(span).fill(0), wau: new Array<number>(span).fill(0), mau: new Array<number>(span).fill(0) };
  const active = new Map<string, number>();
  const daysActive = new Map<number, number>();
  const life = buckets.map(() => ({ new: 0, returning: 0, resurrecting: 0, dormant: 0 }));
  const on = new Uint8Array(span);
  const upTo = new Int32Array(span + 1); // upTo[d + 1]: active days up to d
  const any = (a: number, b: number) => upTo[b + 1]! - upTo[Math.max(0, a)]! > 0;
  for (const r of rows) {
    const n = Number(r.n);
    on.fill(0);
    r.w.split(',').forEach((word, w) => {
      const v = BigInt(word);
      const lo = Number(v & 0xffffffffn);
      const hi = Number(v >> 32n);
      for (let bit = 0; bit < WORD; bit++) if ((bit < 32 ? (lo >>> bit) & 1 : (hi >>> (bit - 32)) & 1) === 1) on[w * WORD + bit] = 1;
    });
    for (let d = 0; d < span; d++) upTo[d + 1] = upTo[d]! + on[d]!;
    for (let d = from; d < span; d++) {
      if (on[d]) roll.dau[d]! += n;
      if (any(d - 6, d)) roll.wau[d]! += n;
      if (any(d - 29, d)) roll.mau[d]! += n;
    }
    // Buckets: every active one (the days before the range too, for lifecycle), and active days per bucket within the range.
    const all = new Set<string>();
    const within = new Map<string, number>();
    for (let d = 0; d < span; d++) {
      if (!on[d]) continue;
      const b = bucketOfDay[d]!;
      all.add(b);
      if (d >= from) within.set(b, (within.get(b) ?? 0) + 1);
    }
    for (const b of within.keys()) active.set(b, (active.get(b) ?? 0) + n);
    // Days active per actor in the range (interval day), else per actor and bucket.
    for (const count of i === 'day' ? (within.size ? [[...within.values()].reduce((a, c) => a + c, 0)] : []) : within.values())
      daysActive.set(count, (daysActive.get(count) ?? 0) + n);
    const first = r.first ?? [...all].sort()[0]!;
    buckets.forEach((b, k) => {
      const now = all.has(b);
      const before = all.has(shift(b, i, -1));
      if (now && first === b) life[k]!.new += n;
      else if (now && first < b) life[k]![before ? 'returning' : 'resurrecting'] += n;
      else if (!now && before) life[k]!.dormant += n;
    });
  }

  const rolling = days
    .slice(from)
    .map((date, k) => ({
      date,
      dau: roll.dau[from + k]!,
      wau: roll.wau[from + k]!,
      mau: roll.mau[from + k]!,
      dau_mau: ratio(roll.dau[from + k]!, roll.mau[from + k]!),
    }));
  const withMau = rolling.filter((r) => r.mau > 0);
  return {
    source: ad.source,
    data: buckets.map((date) => ({ date, active: active.get(date) ?? 0 })),
    rolling,
    lifecycle: buckets.map((date, k) => ({ date, ...life[k]! })),
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
  const answer = { ...(await head(q, f.scope)), ...(f.scope.empty ? empty : await period(q, f)) };
  if (!f.compare) return answer;
  const prev = previousPeriod(f);
  return {
    ...answer,
    compare: { range: { from: prev.scope.from.toISOString(), to: prev.scope.to.toISOString() }, ...(prev.scope.empty ? empty : await period(q, prev)) },
  };
}
