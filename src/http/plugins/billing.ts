import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { tenantBilling } from '../../storage/billing-state.js';
import { retryAfterSeconds } from '../../domain/billing.js';
import { AppError } from '../../errors.js';
import type { AppContext } from '../context.js';
import { principalOf } from './auth.js';
import { holdRefusal } from './held-refusal.js';

const REASONS = {
  quota_exhausted: 'the monthly event allotment is exhausted and its grace period is over',
  trial_expired: 'the trial has ended',
  subscription_cancelled: 'the subscription was cancelled and its grace period is over',
} as const;

/**
 * onRequest hook for every ingestion route: 402 billing_blocked while the tenant's billing state
 * blocks ingestion. Decided from the key alone, before the body is read: capped clients in the
 * field resend the same batch on every flush tick. Nothing is stored and no dead letter is kept.
 */
export function requireAccepting(ctx: AppContext): onRequestAsyncHookHandler {
  return async (request: FastifyRequest) => {
    const now = ctx.now();
    const { state } = await tenantBilling(ctx.db, ctx.plans, ctx.config, principalOf(request).tenant, now, false);
    if (state.state !== 'blocked') return;
    const seconds = retryAfterSeconds(state, now);
    holdRefusal(
      request,
      new AppError(402, 'billing_blocked', `ingestion is blocked: ${REASONS[state.reason]}`, {
        extra: { reason: state.reason, ...(state.retryAt ? { retry_at: state.retryAt.toISOString() } : {}) },
        ...(seconds ? { headers: { 'retry-after': String(seconds) } } : {}),
      }),
    );
  };
}
