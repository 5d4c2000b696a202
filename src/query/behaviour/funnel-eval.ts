// The funnel state machine, run once per counted unit (actor, session or account) over that
// unit's events in time order. It mirrors PostHog's aggregate_funnel UDF: every step-1 event in
// the range starts an attempt; an attempt advances through the steps within the conversion window
// from its start; the unit's result is its furthest attempt (the earliest one on a tie). An
// exclusion event between the two steps it names kills its attempt. Pure: no I/O.

export type FunnelOrder = 'ordered' | 'strict' | 'unordered';

/**
 * A unit's events in time order, as columns (no object per event): event i's time in ms, and bit
 * masks of the steps and of the exclusions it matches. Only the first `n` entries count.
 */
export interface UnitEvents {
  n: number;
  t: ArrayLike<number>;
  steps: ArrayLike<number>;
  excl: ArrayLike<number>;
}

/** An exclusion between steps `from` and `to` (1-based): it counts after `from` is reached and before `to` is. */
export interface ExclusionSpan {
  from: number;
  to: number;
}

export interface FunnelRules {
  steps: number;
  order: FunnelOrder;
  windowMs: number;
  /** Entries count only from events in [from, to). */
  from: number;
  to: number;
  exclusions: ExclusionSpan[];
}

export interface UnitResult {
  /** Steps reached, 0 when the unit never entered or every attempt was excluded. */
  reached: number;
  /** The time each step was reached, ms; times[0] is the entry. */
  times: number[];
  /** The index of the attempt's entry event (its breakdown value is the entry's: first touch). */
  entry: number;
}

const has = (mask: number, i: number) => (mask & (1 << i)) !== 0;

function excluded(excl: number, reached: number, rules: FunnelRules): boolean {
  if (excl === 0) return false;
  return rules.exclusions.some((x, i) => has(excl, i) && reached >= x.from && reached < x.to);
}

/** One attempt from the entry event at index s; null when an exclusion killed it. */
function attempt(events: UnitEvents, s: number, rules: FunnelRules): UnitResult | null {
  const start = events.t[s]!;
  const end = start + rules.windowMs;
  const times = [start];
  // Unordered: which steps are done (the entry event takes the first step it matches).
  let done = 0;
  if (rules.order === 'unordered') {
    for (let i = 0; i < rules.steps; i++)
      if (has(events.steps[s]!, i)) {
        done = 1 << i;
        break;
      }
  }
  for (let j = s + 1; j < events.n && times.length < rules.steps; j++) {
    const t = events.t[j]!;
    if (t > end) break;
    const steps = events.steps[j]!;
    const reached = times.length;
    if (rules.order === 'unordered') {
      let took = -1;
      for (let i = 0; i < rules.steps; i++)
        if (has(steps, i) && !has(done, i)) {
          took = i;
          break;
        }
      if (took >= 0) {
        done |= 1 << took;
        times.push(t);
        continue;
      }
    } else if (has(steps, reached)) {
      times.push(t);
      continue;
    }
    if (excluded(events.excl[j]!, reached, rules)) return null;
    // Strict: any other event of the unit ends the attempt where it stands.
    if (rules.order === 'strict') break;
  }
  return { reached: times.length, times, entry: s };
}

export function evaluateUnit(events: UnitEvents, rules: FunnelRules): UnitResult {
  let best: UnitResult = { reached: 0, times: [], entry: -1 };
  for (let s = 0; s < events.n; s++) {
    const t = events.t[s]!;
    if (t < rules.from || t >= rules.to) continue;
    const steps = events.steps[s]!;
    const entry = rules.order === 'unordered' ? steps !== 0 : has(steps, 0);
    if (!entry) continue;
    const r = attempt(events, s, rules);
    if (r && r.reached > best.reached) best = r;
    if (best.reached === rules.steps) break;
  }
  return best;
}

/** The median of a list of numbers (the mean of the two middle ones for an even count); null when empty. */
export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort(); // numeric, without a comparator called per pair
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
