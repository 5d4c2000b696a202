import { Type } from 'typebox';

// Sessions, exceptions and identify. Types are checked by these schemas (422 when wrong); the
// rules with their own codes (account and license ids, reserved keys, reserved end reason,
// product and version) are applied by src/ingest/records. product/product_version may come under
// their legacy names source_app/source_version, so neither pair is required by the schema.
const Product = {
  product: Type.Optional(Type.String({ description: 'product slug (legacy: source_app)' })),
  product_version: Type.Optional(Type.String({ description: 'legacy: source_version' })),
  source_app: Type.Optional(Type.String()),
  source_version: Type.Optional(Type.String()),
};
const Context = {
  account_id: Type.Optional(Type.Union([Type.String({ description: '1-256 chars, no control characters' }), Type.Null()])),
  license_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
};

export const SessionStart = Type.Object({
  session_id: Type.String({ description: "the client's identifier (a UUID when events reference it)" }),
  actor_id: Type.String(),
  started_at: Type.String({ description: 'RFC 3339' }),
  properties: Type.Optional(
    Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'same limits and reserved keys as event properties' }),
  ),
  ...Product,
  ...Context,
});

export const SessionEnd = Type.Object({
  session_id: Type.String(),
  ended_at: Type.String({ description: 'RFC 3339' }),
  end_reason: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description: 'normal (default; also for null) | sdk_recovery; timeout is reserved for the server (422 reserved_end_reason)',
    }),
  ),
  actor_id: Type.Optional(Type.String({ description: 'sdk_recovery start context: creates the session if it is unknown' })),
  started_at: Type.Optional(Type.String()),
  ...Product,
  ...Context,
});

export const ExceptionBody = Type.Object({
  exception_id: Type.String(),
  exception_type: Type.String(),
  severity: Type.Enum(['fatal', 'non_fatal']),
  occurred_at: Type.String({ description: 'RFC 3339' }),
  actor_id: Type.String(),
  message: Type.Optional(Type.Union([Type.String({ description: 'truncated to 1000 chars' }), Type.Null()])),
  stack_trace: Type.Optional(Type.Union([Type.String({ description: 'truncated to 32,768 chars' }), Type.Null()])),
  breadcrumbs: Type.Optional(Type.Unknown({ description: 'any JSON value, at most 32 levels deep' })),
  session_id: Type.Optional(Type.Unknown({ description: 'a UUID; anything else is ignored' })),
  environment_context: Type.Optional(Type.Unknown()),
  ...Product,
  ...Context,
});

export const IdentifyBody = Type.Object({
  anonymous_actor_id: Type.String(),
  identified_actor_id: Type.String(),
  identified_at: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'RFC 3339; defaults (also for null) to the time of receipt' })),
  product: Type.Optional(Type.String()),
  product_version: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'null is allowed, also in strict mode' })),
  source_app: Type.Optional(Type.String()),
  source_version: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  traits: Type.Optional(
    Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description:
        "the user's traits: a flat object with the limits and reserved keys of event properties; the newest (by identified_at) is kept per identified actor",
    }),
  ),
});

export const Accepted = Type.Object({ status: Type.Literal('accepted') });
export const SessionAccepted = Type.Object({ session_id: Type.String(), status: Type.Literal('accepted') });
export const SessionEnded = Type.Object({ session_id: Type.String(), status: Type.Enum(['ended', 'already_ended']) });
export const ExceptionAccepted = Type.Object({ exception_id: Type.String(), status: Type.Literal('accepted'), fingerprint: Type.String() });
