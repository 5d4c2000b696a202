import { isStorableString } from '../domain/text.js';
import type { Db } from '../storage/db.js';
import { storedEventIds } from '../storage/events.js';
import { touchVersions } from '../storage/versions.js';
import { SessionSigns, VersionTouches } from './caches.js';
import { Judgement, values, type Pending } from './judgement.js';
import { checkAccountId } from './steps/check-account-id.js';
import { checkAllowlist } from './steps/check-allowlist.js';
import { checkLicenseId } from './steps/check-license-id.js';
import { checkReservedKeys } from './steps/check-reserved-keys.js';
import { checkSize } from './steps/check-size.js';
import { checkVersions } from './steps/check-version.js';
import { dedupeBatch } from './steps/dedupe-batch.js';
import { resolveProducts } from './steps/resolve-product.js';
import { validateFields } from './steps/validate-fields.js';
import type { RejectionCode } from './types.js';
import { writeBatch } from './write-batch.js';

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

export interface BatchInput {
  tenantId: string;
  apiKeyId: string;
  receivedAt: Date;
  /** The billing period the new events count in, and the plan's allotment: reaching it stamps the tenant. */
  periodStart: Date;
  allotment: number | null;
  /** A cap plan: its stamp decides when ingestion stops (storage/event-batch.ts, after the commit). */
  capped?: boolean;
  elements: unknown[];
}

export interface IngestLog {
  warn(obj: object, msg: string): void;
}

export interface EventIngest {
  ingest(input: BatchInput): Promise<BatchOutcome>;
}

/** The event_id as sent, when it is a string that can be echoed: the results name each element by it. */
function sentEventId(raw: unknown): string | null {
  const id = raw && typeof raw === 'object' ? (raw as Record<string, unknown>).event_id : undefined;
  return typeof id === 'string' && isStorableString(id) ? id : null;
}

/**
 * The event ingestion path. The steps run in the contract's precedence order, so the first step
 * that rejects an element decides its reason; each sees only the elements still in the running,
 * at the stage the previous step left them (parsed → resolved → admitted). Steps return verdicts
 * and what they want done (versions to register or touch); the pipeline does it: the write is its
 * end, and the only statement that changes anything for the batch.
 */
export function createEventIngest(db: Db, log: IngestLog): EventIngest {
  const signs = new SessionSigns();
  const touches = new VersionTouches();

  async function ingest(input: BatchInput): Promise<BatchOutcome> {
    const judged = new Judgement();
    const all: Pending<unknown>[] = input.elements.map((value, index) => ({ index, value }));

    const sized = judged.each(all, checkSize); // event_too_large
    const parsed = judged.each(sized, validateFields); // invalid_event
    const unreserved = judged.each(parsed, checkReservedKeys); // reserved_property_key
    const withAccount = judged.each(unreserved, checkAccountId); // invalid_account_id
    const withLicense = judged.each(withAccount, checkLicenseId); // invalid_license_id
    const catalog = await resolveProducts(db, input.tenantId, values(withLicense));
    const resolved = judged.all(withLicense, catalog.verdicts); // UNRECOGNIZED_PRODUCT
    const allowed = judged.all(resolved, await checkAllowlist(db, values(resolved))); // ALLOWLIST_REJECTED
    const versions = checkVersions(values(allowed), catalog.versionStatuses);
    const admitted = judged.all(allowed, versions.verdicts); // UNREGISTERED_VERSION, or registration
    const { unique, duplicates } = dedupeBatch(admitted);
    for (const index of await storedAmongRuled(db, input.tenantId, judged, withLicense, admitted)) duplicates.add(index);

    const inserted = await writeBatch(db, signs, {
      tenantId: input.tenantId,
      apiKeyId: input.apiKeyId,
      receivedAt: input.receivedAt,
      periodStart: input.periodStart,
      allotment: input.allotment,
      capped: input.capped ?? false,
      events: unique,
      rejected: [...judged.rejections].map(([index, rejection]) => ({ raw: input.elements[index], rejection })),
      register: versions.register,
    });

    // After the commit, never awaited by the answer: a failure only delays last_seen.
    const touch = touches.due(versions.seen, input.receivedAt.getTime());
    if (touch.length > 0) {
      void touchVersions(db, input.tenantId, touch, input.receivedAt).catch((err: unknown) =>
        log.warn({ err }, "moving versions' last_seen failed; it moves with a later batch"),
      );
    }
    return outcome(input.elements, judged, admitted, duplicates, inserted);
  }
  return { ingest };
}

/** The reasons that depend on the tenant's rules as they are now (products, allowlists, versions), not on the event itself. */
const RULED: ReadonlySet<RejectionCode> = new Set<RejectionCode>(['UNRECOGNIZED_PRODUCT', 'ALLOWLIST_REJECTED', 'UNREGISTERED_VERSION']);

/**
 * An event refused by a rule of the tenant's that may have changed since (a version archived under
 * strict mode, a product deleted, an allowlist) but already stored under its id is a client's
 * retry of an accepted event: it stays accepted, a duplicate, and no dead letter is kept for it
 * (CONTRACT.md: a retry never turns a 200 into a 207; each event is judged once). So is a later
 * copy in the same batch of an id an earlier element was admitted under (BAD-INPUTS.md: a
 * duplicated event_id in one batch is reported consistently): as if the copies came one batch
 * after the other. The store is asked only when such a rejection happened, so a batch the rules
 * admit costs no extra statement. Returns those indexes, taken out of the rejections.
 */
async function storedAmongRuled(
  db: Db,
  tenantId: string,
  judged: Judgement,
  checked: readonly Pending<{ event_id: string }>[],
  admitted: readonly Pending<{ event_id: string }>[],
): Promise<number[]> {
  const ruled = checked.filter((p) => {
    const rejection = judged.rejections.get(p.index);
    return rejection !== undefined && RULED.has(rejection.reason);
  });
  if (ruled.length === 0) return [];
  const firstAdmitted = new Map<string, number>();
  for (const p of admitted) if (!firstAdmitted.has(p.value.event_id)) firstAdmitted.set(p.value.event_id, p.index);
  const earlier = (p: Pending<{ event_id: string }>) => (firstAdmitted.get(p.value.event_id) ?? Infinity) < p.index;
  const ask = ruled.filter((p) => !earlier(p));
  const stored =
    ask.length === 0
      ? new Set<string>()
      : await storedEventIds(
          db,
          tenantId,
          ask.map((p) => p.value.event_id),
        );
  const retried = ruled.filter((p) => earlier(p) || stored.has(p.value.event_id)).map((p) => p.index);
  for (const index of retried) judged.rejections.delete(index);
  return retried;
}

function outcome(
  elements: unknown[],
  judged: Judgement,
  admitted: Pending<{ event_id: string }>[],
  duplicates: Set<number>,
  inserted: Set<string>,
): BatchOutcome {
  const eventIds = new Map(admitted.map((p) => [p.index, p.value.event_id]));
  let accepted = 0;
  const results = elements.map((raw, index): EventResult => {
    const event_id = sentEventId(raw);
    const rejection = judged.rejections.get(index);
    if (rejection) return { index, event_id, status: 'rejected', reason: rejection.reason, message: rejection.message };
    accepted++;
    const duplicate = duplicates.has(index) || !inserted.has(eventIds.get(index)!);
    return duplicate ? { index, event_id, status: 'accepted', duplicate: true } : { index, event_id, status: 'accepted' };
  });
  return { accepted, rejected: elements.length - accepted, results, stored: inserted.size };
}
