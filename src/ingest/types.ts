import type { Queryable, Db } from '../storage/db.js';
import type { EventRecord } from '../storage/events.js';
import type { ProductForIngest } from '../storage/products.js';

/** Event-level rejection codes, spelled as SPEC.md and CONTRACT.md spell them, in precedence order. */
export type RejectionCode =
  | 'event_too_large'
  | 'invalid_event'
  | 'reserved_property_key'
  | 'invalid_account_id'
  | 'invalid_license_id'
  | 'UNRECOGNIZED_PRODUCT'
  | 'ALLOWLIST_REJECTED'
  | 'UNREGISTERED_VERSION';

export interface Rejection {
  reason: RejectionCode;
  message: string;
}

/** A step's verdict on one element: undefined lets it through. */
export type Outcome = Rejection | undefined;
export const reject = (reason: RejectionCode, message: string): Rejection => ({ reason, message });

/** One element of the batch as it moves through the steps. */
export interface Candidate {
  index: number;
  raw: unknown;
  /** The event_id as sent, when it was a string: echoed in the results. */
  sentEventId: string | null;
  /** Filled by validate-fields; present on every candidate that passed it. The row as stored. */
  event?: EventRecord;
  /** The product as sent (slug), filled by validate-fields with `event`. */
  productSlug?: string;
  rejection?: Rejection;
  /** Set by dedupe-batch on a later copy of an event_id already in this batch. */
  duplicateInBatch?: boolean;
}

export interface BatchContext {
  db: Db;
  tenantId: string;
  apiKeyId: string;
  receivedAt: Date;
  periodStart: Date;
  /** The plan's monthly allotment: reaching it stamps the tenant (the start of a cap plan's grace). */
  allotment: number | null;
  candidates: Candidate[];
  /** Read with the versions below, and shared with other batches (Db.catalogRead): never modified. */
  products: ReadonlyMap<string, ProductForIngest>;
  /** Registered versions the batch names, by versionKey: their status (read with the products). */
  versionStatuses: ReadonlyMap<string, string>;
  /** (product, version) pairs to auto-register in the write transaction. */
  newVersions: { productId: string; version: string }[];
  /** Pairs whose last_seen the persist step may move forward. */
  seenVersions: { productId: string; version: string }[];
  /** Filled by persist: ids that were new to the store. */
  inserted: Set<string>;
}

/** A step that judges one element at a time, with no I/O. */
export interface ElementStep {
  kind: 'element';
  name: string;
  run(c: Candidate, ctx: BatchContext): Outcome;
}

/** A step that needs the whole batch (one store round trip for all of it). */
export interface BatchStep {
  kind: 'batch';
  name: string;
  run(ctx: BatchContext, pending: Candidate[]): Promise<void>;
}

export type Step = ElementStep | BatchStep;
export type { Queryable };
