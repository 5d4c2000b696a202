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

/** The first of the funnel's steps a mask holds (its lowest bit below `steps`), or -1. */
function firstStep(mask: number, steps: number): number {
  for (let i = 0; i < steps; i++) if (has(mask, i)) return i;
  return -1;
}

/** Unordered: the steps done by an entry event, which takes the first step it matches. */
const entryStep = (mask: number, rules: FunnelRules) => {
  const first = firstStep(mask, rules.steps);
  return first < 0 ? 0 : 1 << first;
};

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
  let done = rules.order === 'unordered' ? entryStep(events.steps[s]!, rules) : 0;
  for (let j = s + 1; j < events.n && times.length < rules.steps; j++) {
    const t = events.t[j]!;
    if (t > end) break;
    const steps = events.steps[j]!;
    const reached = times.length;
    if (rules.order === 'unordered') {
      const took = firstStep(steps & ~done, rules.steps);
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

/**
 * Units with more events than this are evaluated through per-step position lists (indexed
 * below), which answer each attempt in a few binary searches; smaller ones by scanning, whose
 * cost (entries × events in the window) stays small below it.
 */
export const SCAN_MAX_EVENTS = 64;

export function evaluateUnit(events: UnitEvents, rules: FunnelRules, scanMax = SCAN_MAX_EVENTS): UnitResult {
  const indexed = events.n > scanMax && rules.order !== 'strict' ? new Positions(events, rules) : undefined;
  let best: UnitResult = { reached: 0, times: [], entry: -1 };
  for (let s = 0; s < events.n; s++) {
    const t = events.t[s]!;
    if (t < rules.from || t >= rules.to) continue;
    const steps = events.steps[s]!;
    const entry = rules.order === 'unordered' ? steps !== 0 : has(steps, 0);
    if (!entry) continue;
    const r = indexed ? indexed.attempt(s) : attempt(events, s, rules);
    if (r && r.reached > best.reached) best = r;
    if (best.reached === rules.steps) break;
  }
  return best;
}

/** The first index in [lo, hi) of the ascending list xs whose value is at least x (past x when `past`); hi when none. */
function bound(xs: ArrayLike<number>, x: number, lo: number, hi: number, past: boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < x || (past && xs[mid] === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
/** The first index in [lo, hi) whose value is at least x. */
const lowerBound = (xs: ArrayLike<number>, x: number, lo = 0, hi = xs.length) => bound(xs, x, lo, hi, false);
/** The first index in [lo, hi) whose value is past x. */
const upperBound = (xs: ArrayLike<number>, x: number, lo = 0, hi = xs.length) => bound(xs, x, lo, hi, true);

/**
 * A big unit's attempts without scanning (not strict: a strict attempt ends at its first other
 * event, so scanning it is cheap). The same answer as attempt(), step for step: an attempt's next
 * step is the first event after its last one that the step matches (ordered), or that any step
 * not done matches (unordered, taking the first of them it matches); every event in between
 * matches none of those, so it is checked for exclusions, found as "an exclusion event in this
 * range of indexes"; the attempt stops at its window's end. Each answer is a binary search in
 * the list of positions of a step (or an exclusion): a unit of tens of thousands of entries (a
 * bot, a big account) no longer costs entries × events in the window (100k events took ~8 s).
 */
class Positions {
  private readonly steps: Int32Array[];
  private readonly excl: Int32Array[];
  constructor(
    private readonly events: UnitEvents,
    private readonly rules: FunnelRules,
  ) {
    const list = (count: number, bits: ArrayLike<number>) => {
      const sizes = new Array<number>(count).fill(0);
      for (let j = 0; j < events.n; j++) for (let i = 0; i < count; i++) if (has(bits[j]!, i)) sizes[i]!++;
      const lists = sizes.map((size) => new Int32Array(size));
      const at = new Array<number>(count).fill(0);
      for (let j = 0; j < events.n; j++) for (let i = 0; i < count; i++) if (has(bits[j]!, i)) lists[i]![at[i]!++] = j;
      return lists;
    };
    this.steps = list(rules.steps, events.steps);
    this.excl = list(rules.exclusions.length, events.excl);
  }

  /** Whether an exclusion that counts with `reached` steps done has an event at an index in [lo, hi). */
  private killed(lo: number, hi: number, reached: number): boolean {
    if (lo >= hi) return false;
    return this.rules.exclusions.some((x, i) => {
      if (reached < x.from || reached >= x.to) return false;
      const list = this.excl[i]!;
      const k = lowerBound(list, lo);
      return k < list.length && list[k]! < hi;
    });
  }

  attempt(s: number): UnitResult | null {
    const { events, rules } = this;
    const start = events.t[s]!;
    // The first index past the window (times are in order): events there are never read.
    const lim = upperBound(events.t, start + rules.windowMs, s + 1, events.n);
    const times = [start];
    let done = rules.order === 'unordered' ? entryStep(events.steps[s]!, rules) : 0;
    for (let pos = s; times.length < rules.steps;) {
      // The next event that takes a step: of the next step (ordered), of any step not done (unordered).
      let next = events.n;
      for (let i = 0; i < rules.steps; i++) {
        if (rules.order === 'unordered' ? has(done, i) : i !== times.length) continue;
        const list = this.steps[i]!;
        const k = lowerBound(list, pos + 1);
        if (k < list.length && list[k]! < next) next = list[k]!;
      }
      if (this.killed(pos + 1, Math.min(next, lim), times.length)) return null;
      if (next >= lim) break;
      if (rules.order === 'unordered') done |= 1 << firstStep(events.steps[next]! & ~done, rules.steps);
      times.push(events.t[next]!);
      pos = next;
    }
    return { reached: times.length, times, entry: s };
  }
}

/** The median of a list of numbers (the mean of the two middle ones for an even count); null when empty. */
export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort(); // numeric, without a comparator called per pair
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
