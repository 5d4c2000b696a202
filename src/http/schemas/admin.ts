import { Type } from 'typebox';
import { PERMISSIONS } from '../../domain/keys.js';
import { PLAN_NAMES } from '../../domain/plans.js';
import { DateTime, NullableDateTime } from './common.js';

export const PlanName = Type.Enum(PLAN_NAMES);
export const PermissionName = Type.Enum(PERMISSIONS);

const Usage = Type.Object({
  period_start: DateTime,
  period_end: DateTime,
  events: Type.Integer({ description: 'accepted events this cycle (not duplicates, not rejections)' }),
  allotment: Type.Union([Type.Integer(), Type.Null()], { description: "the plan's monthly events; null on the unlimited plan (no allotment)" }),
  overage: Type.Integer({ description: 'billable events over the allotment (charge plans only)' }),
});
const BillingState = Type.Union([Type.Literal('accepting'), Type.Literal('blocked')]);

export const Tenant = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  plan: PlanName,
  billing_state: BillingState,
  block_reason: Type.Union([Type.String(), Type.Null()]),
  trial_ends_at: NullableDateTime,
  subscription_status: Type.Union([Type.Literal('active'), Type.Literal('cancelled')]),
  cancelled_at: NullableDateTime,
  account_context_enabled: Type.Boolean(),
  event_retention_days: Type.Union([Type.Integer(), Type.Null()], {
    description: "days of raw events kept; null = the plan's setting, then EVENT_RETENTION_DAYS (0 = forever)",
  }),
  created_at: DateTime,
  usage: Usage,
});

/** GET /v1/usage: the tenant's own view of its plan and usage (docs/plans-and-limits.md). */
export const TenantUsage = Type.Object({
  plan: PlanName,
  policy: Type.Union([Type.Literal('cap'), Type.Literal('charge'), Type.Null()], {
    description:
      'at the allotment: cap (accepting for quota_grace_hours, then 402 until the next cycle), charge (accepting; the events over it are billed); null without an allotment',
  }),
  billing_state: BillingState,
  block_reason: Type.Union([Type.Enum(['quota_exhausted', 'trial_expired', 'subscription_cancelled']), Type.Null()]),
  trial_ends_at: NullableDateTime,
  subscription_status: Type.Union([Type.Literal('active'), Type.Literal('cancelled')]),
  quota_grace_hours: Type.Number({ description: 'a cap plan keeps accepting this long after reaching its allotment' }),
  cancel_grace_hours: Type.Number({ description: 'a cancelled subscription keeps accepting this long' }),
  usage: Usage,
});

export const IssuedKey = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  key: Type.String({ description: 'shown once; only its hash is stored' }),
  permissions: Type.Array(PermissionName),
});

// Write bodies are closed: a key the route does not name is a 400, never a column.
const closed = { additionalProperties: false } as const;

export const CreateTenant = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    plan: PlanName,
  },
  closed,
);

export const PatchTenant = Type.Object(
  {
    plan: Type.Optional(PlanName),
    account_context_enabled: Type.Optional(Type.Boolean()),
    event_retention_days: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: "days of raw events kept (0 = forever); null = back to the plan's setting" }),
    ),
  },
  closed,
);

export const CreateKey = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    permissions: Type.Array(PermissionName, { minItems: 1, uniqueItems: true }),
  },
  closed,
);
