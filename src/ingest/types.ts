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

/** A step's verdict on one element: its value for the next stage, or why it stops here. */
export type Verdict<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly rejection: Rejection };
export const accept = <T>(value: T): Verdict<T> => ({ ok: true, value });
export const reject = (reason: RejectionCode, message: string): Verdict<never> => ({ ok: false, rejection: { reason, message } });

// The stages an event moves through. Each step takes one stage and returns the next, so no step
// fills in a placeholder another left empty.

/** Parsed: well-formed, within every limit; the product is still only the slug that was sent. */
export interface ParsedEvent extends Omit<EventRecord, 'product_id'> {
  productSlug: string;
}

/** Resolved: its product is one of the tenant's, and active. */
export interface ResolvedEvent extends ParsedEvent {
  product: ProductForIngest;
}

/** Admitted: allowed and on an acceptable version; the row as it is stored. */
export type AdmittedEvent = EventRecord;

/** A (product, version) pair a step asks the pipeline to register or touch. */
export interface VersionRef {
  productId: string;
  version: string;
}
