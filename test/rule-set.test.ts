// The client library keeps its own copy of the server's record rules (to refuse at track() what
// the server would refuse for good). This checks the copy against the one rule set in src/domain:
// the same limits and reserved keys, and, on generated properties (fast-check), that whatever the
// client refuses the server refuses with the same reason. Pure functions on both sides; no I/O.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LIMITS as CLIENT, RESERVED_KEYS as CLIENT_RESERVED, checkProperties as clientProperties } from '../client/src/core/validate.js';
import { LIMITS, RESERVED_PROPERTY_KEYS, checkProperties, findHostileContent, reservedPropertyKey } from '../src/domain/record-rules.js';

describe("the client's copy of the record rules", () => {
  it('has the server’s limits', () => {
    const pairs: [keyof typeof CLIENT, number][] = [
      ['eventBytes', LIMITS.eventBytes],
      ['batchBytes', LIMITS.bodyBytes],
      ['batchEvents', LIMITS.batchEvents],
      ['category', LIMITS.category],
      ['name', LIMITS.name],
      ['actorId', LIMITS.actorId],
      ['product', LIMITS.product],
      ['productVersion', LIMITS.productVersion],
      ['propertyKeys', LIMITS.propertyKeys],
      ['propertyKey', LIMITS.propertyKey],
      ['propertyValue', LIMITS.propertyValue],
      ['contextId', LIMITS.accountId],
      ['contextId', LIMITS.licenseId],
      ['message', LIMITS.message],
      ['stackTrace', LIMITS.stackTrace],
    ];
    for (const [key, server] of pairs) assert.equal(CLIENT[key], server, key);
  });

  it('has the server’s reserved property keys', () => {
    assert.deepEqual([...CLIENT_RESERVED].sort(), [...RESERVED_PROPERTY_KEYS].sort());
  });

  it('refuses no properties the server would take, for the same reason when one rule fails', () => {
    const key = fc.oneof(fc.string({ maxLength: 70 }), fc.constantFrom(...RESERVED_PROPERTY_KEYS, '__proto__', '', 'k'.repeat(64), 'k'.repeat(65), '\ud800'));
    const value = fc.oneof(
      fc.string({ maxLength: 260 }),
      fc.constantFrom('v'.repeat(256), 'v'.repeat(257), '😀'.repeat(256), '😀'.repeat(257), 'a\u0000', 'a\ud800'),
      fc.double(),
      fc.integer(),
      fc.constantFrom(2 ** 53, 2 ** 63, Infinity),
      fc.boolean(),
    );
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 22 }), (props) => {
        const client = clientProperties(props);
        const server = serverReason(props);
        if (!client.reason) return;
        assert.notEqual(server, undefined, `the client refuses what the server takes: ${JSON.stringify(props)}`);
        // Where a reserved key and a malformed key meet, the client names the first key it
        // reaches and the server the contract's precedence (invalid_event first): both refuse.
        if (server !== client.reason) assert.deepEqual([client.reason, server], ['reserved_property_key', 'invalid_event'], JSON.stringify(props));
      }),
      { numRuns: 2000 },
    );
  });
});

/** The server's verdict on an event's properties, in its steps' precedence. */
function serverReason(props: Record<string, unknown>): 'invalid_event' | 'reserved_property_key' | undefined {
  if (findHostileContent({ properties: props }, '') || checkProperties(props)) return 'invalid_event';
  return reservedPropertyKey(props) ? 'reserved_property_key' : undefined;
}
