/** Positional parameters for hand-written SQL: `sql.add(value)` is `$n`; only placeholders are spliced into the text. */
export class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}
