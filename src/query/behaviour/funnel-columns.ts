import type { UnitEvents } from './funnel-eval.js';

// A funnel's rows as its state machine reads them (funnels.ts reads, funnel-eval.ts evaluates):
// one unit's events as typed columns, parsed from the comma-separated lists of its row without
// cutting a string per event.

/**
 * The µs in text[i, j), a float8's text of seconds (digits, then maybe a point and digits), read
 * digit by digit: no string is cut out per event. The seventh decimal rounds it half up, as
 * Math.round(Number(text) * 1e6) does (which any other text, an exponent, goes through): the two
 * could differ only for a value within float error of half a µs, and each is a whole µs to within
 * thousandths of one (see where funnels.ts selects `t`) for any range shorter than centuries.
 */
function micros(text: string, i: number, j: number): number {
  let us = 0;
  let k = i;
  for (; k < j; k++) {
    const d = text.charCodeAt(k) - 48;
    if (d < 0 || d > 9) break;
    us = us * 10 + d;
  }
  us *= 1_000_000;
  if (k === j) return us;
  if (text.charCodeAt(k) !== 46) return Math.round(Number(text.slice(i, j)) * 1_000_000);
  for (let place = 100_000, n = 1; ++k < j; n++, place /= 10) {
    const d = text.charCodeAt(k) - 48;
    if (d < 0 || d > 9) return Math.round(Number(text.slice(i, j)) * 1_000_000);
    if (n <= 6) us += d * place;
    else if (n === 7 && d >= 5) us += 1;
  }
  return us;
}

/** One unit's events as columns (funnel-eval.ts), in arrays that grow as needed and are reused. */
export class Columns implements UnitEvents {
  n = 0;
  t = new Float64Array(256);
  steps = new Int32Array(256);
  excl = new Int32Array(256);
  /** Index buffers of timeOrder. */
  private a = new Int32Array(256);
  private b = new Int32Array(256);
  fit(n: number): void {
    this.n = n;
    if (n <= this.t.length) return;
    const size = Math.max(n, this.t.length * 2);
    [this.t, this.steps, this.excl] = [new Float64Array(size), new Int32Array(size), new Int32Array(size)];
    [this.a, this.b] = [new Int32Array(size), new Int32Array(size)];
  }
  /**
   * The events' indexes in time order, stable (events at one instant keep the order they came
   * in): a natural merge sort, which merges the runs already in time order pairwise. A unit's
   * events usually come as one such run per name read (one range of the index each), so this
   * takes a few passes where a sort with a comparator called ~n log n times cost a tenth of the
   * funnel's JavaScript. Valid until the next call.
   */
  timeOrder(): Int32Array {
    const { n, t } = this;
    let [src, dst] = [this.a, this.b];
    let bounds = [0];
    for (let i = 0; i < n; i++) {
      src[i] = i;
      if (i > 0 && t[i]! < t[i - 1]!) bounds.push(i);
    }
    bounds.push(n);
    while (bounds.length > 2) {
      const next = [0];
      for (let r = 0; r + 1 < bounds.length; r += 2) {
        const [lo, mid] = [bounds[r]!, bounds[r + 1]!];
        const hi = r + 2 < bounds.length ? bounds[r + 2]! : mid;
        let [i, j, k] = [lo, mid, lo];
        while (i < mid && j < hi) dst[k++] = t[src[j]!]! < t[src[i]!]! ? src[j++]! : src[i++]!;
        while (i < mid) dst[k++] = src[i++]!;
        while (j < hi) dst[k++] = src[j++]!;
        next.push(hi);
      }
      bounds = next;
      [src, dst] = [dst, src];
    }
    return src;
  }
  /**
   * Reads a unit's comma-separated lists: times (seconds since the scan's start) as ms since the
   * epoch, (baseUs + µs) / 1000, and step masks (non-negative integers: at most 10 steps, so
   * below 2^10); answers whether they came in time order.
   */
  read(times: string, masks: string, baseUs: number): boolean {
    let n = 1;
    for (let i = masks.indexOf(','); i >= 0; i = masks.indexOf(',', i + 1)) n++;
    this.fit(n);
    let ordered = true;
    for (let k = 0, i = 0; k < n; k++) {
      const j = k === n - 1 ? times.length : times.indexOf(',', i);
      this.t[k] = (baseUs + micros(times, i, j)) / 1000;
      if (k > 0 && this.t[k]! < this.t[k - 1]!) ordered = false;
      i = j + 1;
    }
    for (let k = 0, mask = 0, i = 0; i <= masks.length; i++) {
      const c = i === masks.length ? 44 : masks.charCodeAt(i);
      if (c === 44) {
        this.steps[k++] = mask;
        mask = 0;
      } else mask = mask * 10 + c - 48;
    }
    return ordered;
  }
}
