import { checkContextId } from '../../domain/record-rules.js';
import { accept, reject, type ParsedEvent, type Verdict } from '../types.js';

/** invalid_license_id: empty, blank, over 256 characters or with control characters. */
export function checkLicenseId(e: ParsedEvent): Verdict<ParsedEvent> {
  const p = checkContextId(e.license_id, 'license_id');
  return p ? reject('invalid_license_id', `${p.field}: ${p.message}`) : accept(e);
}
