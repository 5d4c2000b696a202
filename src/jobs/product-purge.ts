import { LOCKS } from '../storage/db.js';
import { deleteProduct, productsBeingDeleted, purgeProductChunk } from '../storage/purge.js';
import type { Job } from './runner.js';

const CHUNK = 5000;
const RUN_BUDGET_MS = 10_000;

/** Purges products in `deleting`, chunk by chunk, then removes them; picks up where a crashed run stopped. */
export function productPurgeJob(intervalMs = 30_000): Job {
  return {
    name: 'product-purge',
    lockKey: LOCKS.productPurge,
    intervalMs,
    async run(q) {
      const started = Date.now();
      for (const p of await productsBeingDeleted(q, 10)) {
        while (Date.now() - started < RUN_BUDGET_MS) {
          if ((await q.tx((t) => purgeProductChunk(t, p.tenant_id, p.id, CHUNK))) === 0) {
            await deleteProduct(q, p.tenant_id, p.id);
            break;
          }
        }
        if (Date.now() - started >= RUN_BUDGET_MS) return;
      }
    },
  };
}
