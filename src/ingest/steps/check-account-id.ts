import { checkContextId } from '../../domain/record-rules.js';
import { accept, reject, type ParsedEvent, type Verdict } from '../types.js';

/** invalid_account_id: empty, blank, over 256 characters or with control characters. */
export function checkAccountId(e: ParsedEvent): Verdict<ParsedEvent> {
  const p = checkContextId(e.account_id, 'account_id');
  return p ? reject('invalid_account_id', `${p.field}: ${p.message}`) : accept(e);
}
