import {
  LIMITS,
  checkProperties,
  checkString,
  findHostileContent,
  isPlainObject,
  productOf,
  productVersionOf,
  type Problem,
} from '../../domain/record-rules.js';
import { isRfc3339, isUuid } from '../../domain/text.js';
import { accept, reject, type ParsedEvent, type Verdict } from '../types.js';

const OWN_RULES = new Set(['account_id', 'license_id']);

function firstProblem(e: Record<string, unknown>): Problem {
  const hostile = findHostileContent(e, '', 0, OWN_RULES);
  if (hostile) return hostile;
  if (e.event_id === undefined || e.event_id === null) return { field: 'event_id', message: 'is required' };
  if (!isUuid(e.event_id)) return { field: 'event_id', message: 'must be a UUID (not the nil UUID)' };
  return (
    checkString(e, 'category', LIMITS.category, true) ??
    checkString(e, 'name', LIMITS.name, true) ??
    (e.timestamp === undefined || e.timestamp === null
      ? { field: 'timestamp', message: 'is required' }
      : isRfc3339(e.timestamp)
        ? undefined
        : { field: 'timestamp', message: 'must be an RFC 3339 date-time with Z or an offset' }) ??
    checkString(e, 'actor_id', LIMITS.actorId, true) ??
    checkString(e, e.product === undefined && e.source_app !== undefined ? 'source_app' : 'product', LIMITS.product, true, productOf(e)) ??
    checkString(
      e,
      e.product_version === undefined && e.source_version !== undefined ? 'source_version' : 'product_version',
      LIMITS.productVersion,
      true,
      productVersionOf(e),
    ) ??
    (e.session_id === undefined || e.session_id === null || isUuid(e.session_id) ? undefined : { field: 'session_id', message: 'must be a UUID' }) ??
    checkProperties(e.properties) ??
    // Their values have their own codes (next steps); a wrong type is a malformed event.
    notString(e, 'account_id') ??
    notString(e, 'license_id')
  );
}

const notString = (e: Record<string, unknown>, field: string): Problem =>
  e[field] !== undefined && e[field] !== null && typeof e[field] !== 'string' ? { field, message: 'must be a string' } : undefined;

function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}

/** Required fields, types, lengths, flat properties, and nothing hostile: else invalid_event naming the field. */
export function validateFields(e: unknown): Verdict<ParsedEvent> {
  if (!isPlainObject(e)) return reject('invalid_event', 'each element must be a JSON object');
  const problem = firstProblem(e);
  if (problem) return reject('invalid_event', `${problem.field}: ${problem.message}`);
  const props = e.properties as Record<string, string | number | boolean> | null | undefined;
  return accept({
    event_id: (e.event_id as string).toLowerCase(),
    productSlug: productOf(e) as string,
    product_version: productVersionOf(e) as string,
    category: e.category as string,
    name: e.name as string,
    occurred_at: e.timestamp as string,
    actor_id: e.actor_id as string,
    session_id: (e.session_id as string | undefined)?.toLowerCase() ?? null,
    account_id: (e.account_id as string | undefined) ?? null,
    license_id: (e.license_id as string | undefined) ?? null,
    properties: props && hasKeys(props) ? props : null,
    // Recorded as sent, never validated; a non-string is kept as its JSON text.
    schema_version:
      e.schema_version === undefined || e.schema_version === null
        ? null
        : typeof e.schema_version === 'string'
          ? e.schema_version
          : JSON.stringify(e.schema_version),
  });
}
