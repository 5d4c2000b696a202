import type { Breadcrumb } from './types.js';

/** The last N calls into the client, attached to each captured exception (oldest first). */
export class BreadcrumbRing {
  private readonly items: Breadcrumb[] = [];

  constructor(private readonly max: number) {}

  add(crumb: Breadcrumb): void {
    if (this.max <= 0) return;
    this.items.push(crumb);
    if (this.items.length > this.max) this.items.shift();
  }

  snapshot(): Breadcrumb[] {
    return this.items.map((c) => ({ ...c }));
  }
}
