import { AppError, type FieldError } from '../../errors.js';
import { checkContextId, checkProperties, findHostileContent, isPlainObject, productOf, productVersionOf, reservedPropertyKey } from '../../domain/record-rules.js';
import type { Db, Queryable } from '../../storage/db.js';
import { deadLetterPayload, insertDeadLetters, type RecordKind } from '../../storage/invalid-events.js';
import { catalogForBatch, type ProductForIngest } from '../../storage/products.js';
import { autoRegisterVersions, versionKey } from '../../storage/versions.js';

// What sessions, exceptions and identify share: one record per request, judged whole, 422 on
// any failure (SPEC.md), every 422 kept as a dead letter with its kind.

export interface RecordContext {
  db: Db;
  tenantId: string;
  apiKeyId: string;
  receivedAt: Date;
}

/** A 422 for a single record: problem+json with the code and, for validation, the fields. */
export function unprocessable(code: string, message: string, errors?: FieldError[]): AppError {
  return new AppError(422, code, message, errors ? { errors } : {});
}

export const fieldError = (field: string, message: string) => unprocessable('validation_error', `${field}: ${message}`, [{ field, message }]);

/** Stores a refused record in the Invalid Events list; never fails the request it explains. */
export async function keepDeadLetter(ctx: RecordContext, kind: RecordKind, raw: unknown, err: AppError): Promise<void> {
  const product = isPlainObject(raw) ? productOf(raw) : undefined;
  await insertDeadLetters(ctx.db, ctx.tenantId, ctx.apiKeyId, ctx.receivedAt, [
    {
      kind,
      reason: err.code,
      message: err.message,
      product: typeof product === 'string' && product.isWellFormed() && !product.includes('\u0000') ? product : null,
      payload: deadLetterPayload(raw),
    },
  ]).catch(() => {});
}

/** Hostile content, account/license ids and properties: the checks every record kind makes. */
export function checkCommon(body: Record<string, unknown>, opts: { properties?: boolean } = {}): void {
  const hostile = findHostileContent(body, '', 0, new Set(['account_id', 'license_id']));
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
      throw unprocessable('reserved_property_key', `properties.${reserved} is reserved; use the top-level ${reserved.startsWith('license') ? 'license_id' : 'account_id'}`, [
        { field: `properties.${reserved}`, message: 'is a reserved key' },
      ]);
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
  if ([...version].length > 128) throw fieldError('product_version', 'must be at most 128 characters');
  if ([...slug].length > 256) throw fieldError('product', 'must be at most 256 characters');
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
    throw unprocessable('UNRECOGNIZED_PRODUCT', product ? `product "${slug}" is being deleted` : `product "${slug}" is not a registered product of this tenant`, [
      { field: 'product', message: 'not a registered product' },
    ]);
  }
  if (version === null) return { product, register: false };
  const status = catalog.versions.get(versionKey(product.id, version));
  if (product.strict && status !== 'active') {
    throw unprocessable(
      'UNREGISTERED_VERSION',
      `version "${version}" is ${status ?? 'not registered'} and strict version mode is on for "${slug}"`,
      [{ field: 'product_version', message: status ? `is ${status}` : 'is not registered' }],
    );
  }
  return { product, register: status === undefined };
}

export async function registerIfNew(q: Queryable, ctx: RecordContext, admitted: { product: ProductForIngest; register: boolean }, version: string | null): Promise<void> {
  if (admitted.register && version !== null) await autoRegisterVersions(q, ctx.tenantId, [{ productId: admitted.product.id, version }], ctx.receivedAt);
}
