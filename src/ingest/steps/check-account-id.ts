import { checkContextId } from '../../domain/record-rules.js';
import { reject, type ElementStep } from '../types.js';

export const checkAccountId: ElementStep = {
  kind: 'element',
  name: 'check-account-id',
  run(c) {
    const p = checkContextId(c.event?.account_id, 'account_id');
    return p ? reject('invalid_account_id', `${p.field}: ${p.message}`) : undefined;
  },
};
