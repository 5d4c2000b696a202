import { reservedPropertyKey } from '../../domain/record-rules.js';
import { accept, reject, type ParsedEvent, type Verdict } from '../types.js';

/** reserved_property_key: account and license belong in the top-level fields, never in properties. */
export function checkReservedKeys(e: ParsedEvent): Verdict<ParsedEvent> {
  const key = reservedPropertyKey(e.properties);
  if (key === undefined) return accept(e);
  const top = key.startsWith('license') ? 'license_id' : 'account_id';
  return reject('reserved_property_key', `properties.${key} is reserved; use the top-level ${top}`);
}
