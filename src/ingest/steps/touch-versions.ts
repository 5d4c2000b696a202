import { touchVersions as touchVersionRows, versionKey } from '../../storage/versions.js';
import type { BatchStep } from '../types.js';

// last_seen of a version moves at most once a minute per process: writing it on every batch
// would make concurrent batches of one version queue on its row lock. Runs after the commit and
// is never awaited by the answer; a failure only delays last_seen.
const INTERVAL_MS = 60_000;
const lastTouched = new Map<string, number>();

export const touchVersions: BatchStep = {
  kind: 'batch',
  name: 'touch-versions',
  async run(ctx) {
    const now = ctx.receivedAt.getTime();
    const due = ctx.seenVersions.filter((p) => {
      const key = versionKey(p.productId, p.version);
      if (now - (lastTouched.get(key) ?? 0) < INTERVAL_MS) return false;
      lastTouched.set(key, now);
      return true;
    });
    if (lastTouched.size > 50_000) lastTouched.clear();
    if (due.length > 0) void touchVersionRows(ctx.db, ctx.tenantId, due, ctx.receivedAt).catch(() => {});
  },
};
