import type { Db } from '../storage/db.js';
import { checkAccountId } from './steps/check-account-id.js';
import { checkAllowlist } from './steps/check-allowlist.js';
import { checkLicenseId } from './steps/check-license-id.js';
import { checkReservedKeys } from './steps/check-reserved-keys.js';
import { checkSize } from './steps/check-size.js';
import { checkVersion } from './steps/check-version.js';
import { dedupeBatch } from './steps/dedupe-batch.js';
import { persist } from './steps/persist.js';
import { resolveProduct } from './steps/resolve-product.js';
import { touchVersions } from './steps/touch-versions.js';
import { validateFields } from './steps/validate-fields.js';
import type { BatchContext, Candidate, RejectionCode, Step } from './types.js';

/**
 * The event ingestion path, in order. The order is the contract's precedence: the first step
 * that rejects an element decides its reason. Each step sees only the elements still pending.
 */
export const EVENT_STEPS: readonly Step[] = [
  checkSize, // event_too_large
  validateFields, // invalid_event
  checkReservedKeys, // reserved_property_key
  checkAccountId, // invalid_account_id
  checkLicenseId, // invalid_license_id
  resolveProduct, // UNRECOGNIZED_PRODUCT
  checkAllowlist, // ALLOWLIST_REJECTED
  checkVersion, // UNREGISTERED_VERSION, or auto-registration
  dedupeBatch,
  persist,
  touchVersions, // after the commit, not awaited by the answer
];

export type EventResult =
  | { index: number; event_id: string | null; status: 'accepted'; duplicate?: true }
  | { index: number; event_id: string | null; status: 'rejected'; reason: RejectionCode; message: string };

export interface BatchOutcome {
  accepted: number;
  rejected: number;
  results: EventResult[];
  /** Events new to the store (what the allotment is charged). */
  stored: number;
}

export async function ingestEvents(
  db: Db,
  input: { tenantId: string; apiKeyId: string; periodStart: Date; allotment: number | null; receivedAt: Date; elements: unknown[] },
  steps: readonly Step[] = EVENT_STEPS,
): Promise<BatchOutcome> {
  const candidates: Candidate[] = input.elements.map((raw, index) => {
    const id = raw && typeof raw === 'object' ? (raw as Record<string, unknown>).event_id : undefined;
    return { index, raw, sentEventId: typeof id === 'string' && id.isWellFormed() && !id.includes('\u0000') ? id : null };
  });
  const ctx: BatchContext = {
    db,
    tenantId: input.tenantId,
    apiKeyId: input.apiKeyId,
    receivedAt: input.receivedAt,
    periodStart: input.periodStart,
    allotment: input.allotment,
    candidates,
    products: new Map(),
    versionStatuses: new Map(),
    newVersions: [],
    seenVersions: [],
    inserted: new Set(),
  };

  for (const step of steps) {
    const pending = candidates.filter((c) => !c.rejection);
    if (step.kind === 'element') {
      for (const c of pending) c.rejection = step.run(c, ctx);
    } else if (pending.length > 0 || step.name === 'persist') {
      await step.run(ctx, pending);
    }
  }

  let accepted = 0;
  const results = candidates.map((c): EventResult => {
    if (c.rejection) {
      return { index: c.index, event_id: c.sentEventId, status: 'rejected', reason: c.rejection.reason, message: c.rejection.message };
    }
    accepted++;
    const duplicate = c.duplicateInBatch || !ctx.inserted.has(c.event!.event_id);
    return duplicate
      ? { index: c.index, event_id: c.sentEventId, status: 'accepted', duplicate: true }
      : { index: c.index, event_id: c.sentEventId, status: 'accepted' };
  });
  return { accepted, rejected: candidates.length - accepted, results, stored: ctx.inserted.size };
}
