import type { FieldError } from '../../errors.js';
import { exceedsCodePoints, isStorableString } from '../../domain/text.js';
import {
  LIMITS,
  checkString,
  checkContextId,
  checkProperties,
  findHostileContent,
  isPlainObject,
  productOf,
  productVersionOf,
  reservedPropertyKey,
} from '../../domain/record-rules.js';
import type { Db, Queryable } from '../../storage/db.js';
import { deadLetterPayload, insertDeadLetters, type RecordKind } from '../../storage/invalid-events.js';
import { catalogForBatch, type ProductForIngest } from '../../storage/products.js';
import { autoRegisterVersions, versionKey } from '../../storage/versions.js';

// What sessions, exceptions and identify share: one record per request, judged whole. A record
// function returns a verdict: its answer, or a refusal (422 for any rule the record breaks,
// SPEC.md; 404 or 409 where the contract names them). The route turns a refusal into problem+json
// and keeps every 422 as a dead letter with its kind, in one place (src/http/routes/records.ts).

export interface RecordContext {
  db: Db;
  tenantId: string;
  apiKeyId: string;
  receivedAt: Date;
}

/**
 * Why a record is not taken. Thrown by the checks below and caught only by `judged`, which turns
 * it into the record's verdict: a thrown refusal inside a transaction also rolls it back.
 */
export class Refusal extends Error {
  constructor(
    readonly status: 404 | 409 | 422,
    readonly code: string,
    message: string,
    readonly errors?: FieldError[],
  ) {
    super(message);
  }
}

export type RecordVerdict<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };
export type RecordHandler<T> = (ctx: RecordContext, body: Record<string, unknown>) => Promise<RecordVerdict<T>>;

/** A record function whose refusals come back as its verdict; any other error is the service's and propagates. */
export function judged<T>(fn: (ctx: RecordContext, body: Record<string, unknown>) => Promise<T>): RecordHandler<T> {
  return async (ctx, body) => {
    try {
      return { ok: true, value: await fn(ctx, body) };
    } catch (err) {
      if (err instanceof Refusal) return { ok: false, refusal: err };
      throw err;
    }
  };
}

/** A 422 for a single record: the code and, for validation, the fields. */
export const unprocessable = (code: string, message: string, errors?: FieldError[]): Refusal => new Refusal(422, code, message, errors);

export const fieldError = (field: string, message: string) => unprocessable('validation_error', `${field}: ${message}`, [{ field, message }]);

/** Stores a refused record in the Invalid Events list; never fails the request it explains, but says so in the log. */
export async function keepDeadLetter(
  ctx: RecordContext,
  kind: RecordKind,
  raw: unknown,
  refusal: Refusal,
  log: { warn(obj: object, msg: string): void },
): Promise<void> {
  const product = isPlainObject(raw) ? productOf(raw) : undefined;
  await insertDeadLetters(ctx.db, ctx.tenantId, ctx.apiKeyId, ctx.receivedAt, [
    {
      kind,
      reason: refusal.code,
      message: refusal.message,
      product: typeof product === 'string' && isStorableString(product) ? product : null,
      payload: deadLetterPayload(raw),
    },
  ]).catch((err: unknown) => log.warn({ err, kind, reason: refusal.code }, 'a refused record could not be kept as a dead letter'));
}

/** A required string field within its limit (code points), the same rule for every record kind. */
export function requiredText(body: Record<string, unknown>, field: string, max: number): string {
  const p = checkString(body, field, max, true);
  if (p) throw fieldError(p.field, p.message);
  return body[field] as string;
}

/** Hostile content, account/license ids and properties: the checks every record kind makes. */
export function checkCommon(body: Record<string, unknown>, opts: { properties?: boolean } = {}): void {
  // The record's own object is not a level: 32 levels is the nesting of its values, breadcrumbs and environment_context (CONTRACT.md).
  const hostile = findHostileContent(body, '', -1, new Set(['account_id', 'license_id']));
  if (hostile) throw fieldError(hostile.field, hostile.message);
  for (const f of ['account_id', 'license_id'] as const) {
    const p = checkContextId(body[f], f);
    if (p) throw unprocessable(f === 'account_id' ? 'invalid_account_id' : 'invalid_license_id', `${p.field}: ${p.message}`, [p]);
  }
  if (opts.properties) {
    const p = checkProperties(body.properties);
    if (p) throw fieldError(p.field, p.message);
    const reserved = reservedPropertyKey(body.properties);
    if (reserved) {
      throw unprocessable(
        'reserved_property_key',
        `properties.${reserved} is reserved; use the top-level ${reserved.startsWith('license') ? 'license_id' : 'account_id'}`,
        [{ field: `properties.${reserved}`, message: 'is a reserved key' }],
      );
    }
  }
}

/** product / product_version with their legacy names, as strings (validated by the route schema or here). */
export function productAndVersion(body: Record<string, unknown>, versionRequired = true): { slug: string; version: string | null } {
  const slug = productOf(body);
  if (typeof slug !== 'string' || slug.length === 0) throw fieldError('product', 'is required (or source_app)');
  // An explicit null (identify) is a null version, not a missing one to look up under the legacy name.
  const version = body.product_version === null ? null : productVersionOf(body);
  if (version === null && !versionRequired) return { slug, version: null };
  if (typeof version !== 'string' || version.length === 0) throw fieldError('product_version', 'is required (or source_version)');
  if (exceedsCodePoints(version, LIMITS.productVersion)) throw fieldError('product_version', `must be at most ${LIMITS.productVersion} characters`);
  if (exceedsCodePoints(slug, LIMITS.product)) throw fieldError('product', `must be at most ${LIMITS.product} characters`);
  return { slug, version };
}

/**
 * The product must exist and not be deleting; with strict mode on, the version must be registered
 * and active (a null version, allowed on identify, always passes). Otherwise an unknown version is
 * registered, in the caller's transaction `q` when given.
 */
export async function admitProductVersion(ctx: RecordContext, slug: string, version: string | null): Promise<{ product: ProductForIngest; register: boolean }> {
  // The product and the version's status in one round trip.
  const catalog = await catalogForBatch(ctx.db, ctx.tenantId, [slug], version === null ? [] : [version]);
  const product = catalog.products.get(slug);
  if (!product || product.status !== 'active') {
    throw unprocessable(
      'UNRECOGNIZED_PRODUCT',
      product ? `product "${slug}" is being deleted` : `product "${slug}" is not a registered product of this tenant`,
      [{ field: 'product', message: 'not a registered product' }],
    );
  }
  if (version === null) return { product, register: false };
  const status = catalog.versions.get(versionKey(product.id, version));
  if (product.strict && status !== 'active') {
    throw unprocessable('UNREGISTERED_VERSION', `version "${version}" is ${status ?? 'not registered'} and strict version mode is on for "${slug}"`, [
      { field: 'product_version', message: status ? `is ${status}` : 'is not registered' },
    ]);
  }
  return { product, register: status === undefined };
}

/**
 * admitProductVersion for a record that may be a client's retry: when the product or version is
 * refused but `stored` finds the record already stored under its id, it was accepted before the
 * rule changed (a version archived under strict mode, a product being deleted) and stays accepted:
 * `{ stored }` then, and the caller answers as for any repeat (CONTRACT.md: a retry never turns a
 * success into a refusal; strict mode is not retroactive). `stored` runs only after a refusal.
 */
export async function admitUnlessStored<S>(
  ctx: RecordContext,
  slug: string,
  version: string | null,
  stored: () => Promise<S | undefined>,
): Promise<{ admitted: { product: ProductForIngest; register: boolean } } | { stored: S }> {
  try {
    return { admitted: await admitProductVersion(ctx, slug, version) };
  } catch (err) {
    // Only a refusal by a rule; a store error stays what it is (a 503).
    if (!(err instanceof Refusal)) throw err;
    const found = await stored();
    if (found === undefined) throw err;
    return { stored: found };
  }
}

export async function registerIfNew(
  q: Queryable,
  ctx: RecordContext,
  admitted: { product: ProductForIngest; register: boolean },
  version: string | null,
): Promise<void> {
  if (admitted.register && version !== null) await autoRegisterVersions(q, ctx.tenantId, [{ productId: admitted.product.id, version }], ctx.receivedAt);
}
