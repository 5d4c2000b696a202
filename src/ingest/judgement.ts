import type { Rejection, Verdict } from './types.js';

/** An element still in the running: its index in the batch and its value at the current stage. */
export interface Pending<T> {
  index: number;
  value: T;
}

/**
 * Applies steps to the elements still in the running, keeping each element's first rejection by
 * index: the order of the steps is the contract's precedence of rejection codes.
 */
export class Judgement {
  readonly rejections = new Map<number, Rejection>();

  /** An element step: one verdict per element, no I/O. */
  each<I, O>(pending: readonly Pending<I>[], step: (value: I) => Verdict<O>): Pending<O>[] {
    return this.all(
      pending,
      pending.map((p) => step(p.value)),
    );
  }

  /** A batch step's verdicts, one per pending element, in the same order. */
  all<I, O>(pending: readonly Pending<I>[], verdicts: readonly Verdict<O>[]): Pending<O>[] {
    const next: Pending<O>[] = [];
    pending.forEach((p, i) => {
      const v = verdicts[i]!;
      if (v.ok) next.push({ index: p.index, value: v.value });
      else this.rejections.set(p.index, v.rejection);
    });
    return next;
  }
}

export const values = <T>(pending: readonly Pending<T>[]): T[] => pending.map((p) => p.value);
