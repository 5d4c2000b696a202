import { checkContextId } from '../../domain/record-rules.js';
import { reject, type ElementStep } from '../types.js';

export const checkLicenseId: ElementStep = {
  kind: 'element',
  name: 'check-license-id',
  run(c) {
    const p = checkContextId(c.event?.license_id, 'license_id');
    return p ? reject('invalid_license_id', `${p.field}: ${p.message}`) : undefined;
  },
};
