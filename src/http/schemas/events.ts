import { Type } from 'typebox';

// The Event as SPEC.md describes it. POST /v1/events judges each element by the ingest
// pipeline (src/ingest), which applies these same limits element by element, so that one bad
// element is rejected alone; this schema documents the element for OpenAPI.
const Scalar = Type.Union([Type.String({ maxLength: 256 }), Type.Number(), Type.Boolean()]);

export const Event = Type.Object(
  {
    event_id: Type.String({ format: 'uuid', description: 'UUID (v7 recommended); the deduplication key per tenant' }),
    category: Type.String({ minLength: 1, maxLength: 128 }),
    name: Type.String({ minLength: 1, maxLength: 256 }),
    timestamp: Type.String({ format: 'date-time', description: 'RFC 3339 with Z or an offset' }),
    actor_id: Type.String({ minLength: 1, maxLength: 512 }),
    product: Type.String({ minLength: 1, maxLength: 256, description: 'product slug (legacy name: source_app)' }),
    product_version: Type.String({ minLength: 1, maxLength: 128, description: 'legacy name: source_version' }),
    properties: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Scalar, { maxProperties: 20 })),
    session_id: Type.Optional(Type.String({ format: 'uuid' })),
    account_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    license_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    schema_version: Type.Optional(Type.String()),
  },
  { description: 'At most 4,096 bytes serialised. Reserved property keys: account_id, accountId, account, license_id, licenseId, license.' },
);

export const EventBatch = Type.Array(Event, { minItems: 1, maxItems: 1000, description: 'At most 1000 events and 1 MB' });

export const EventResult = Type.Object({
  index: Type.Integer(),
  event_id: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union([Type.Literal('accepted'), Type.Literal('rejected')]),
  duplicate: Type.Optional(Type.Boolean({ description: 'true: this event_id was already accepted; stored and counted once' })),
  reason: Type.Optional(
    Type.String({
      description:
        'event_too_large | invalid_event | reserved_property_key | invalid_account_id | invalid_license_id | UNRECOGNIZED_PRODUCT | ALLOWLIST_REJECTED | UNREGISTERED_VERSION',
    }),
  ),
  message: Type.Optional(Type.String()),
});

export const BatchResponse = Type.Object({
  accepted: Type.Integer(),
  rejected: Type.Integer(),
  results: Type.Array(EventResult, { description: 'One entry per element, in order' }),
});
