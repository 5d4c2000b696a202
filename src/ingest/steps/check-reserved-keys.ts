import { reservedPropertyKey } from '../../domain/record-rules.js';
import { reject, type ElementStep } from '../types.js';

export const checkReservedKeys: ElementStep = {
  kind: 'element',
  name: 'check-reserved-keys',
  run(c) {
    const key = reservedPropertyKey(c.event?.properties);
    if (key === undefined) return undefined;
    const top = key.startsWith('license') ? 'license_id' : 'account_id';
    return reject('reserved_property_key', `properties.${key} is reserved; use the top-level ${top}`);
  },
};
