import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../../errors.js';
import { ACCOUNT_PLANS } from '../../domain/plans.js';
import { principalOf } from './auth.js';

/**
 * After the key and its view_accounts permission (401, then 403): the plan (402
 * plan_limit_reached unless Business, Enterprise, Trial or Unlimited), then the tenant's account context
 * setting (403 account_context_disabled). This order is fixed and tested.
 */
export const requireAccountPlan: onRequestAsyncHookHandler = async (request: FastifyRequest) => {
  const { tenant } = principalOf(request);
  if (!ACCOUNT_PLANS.includes(tenant.plan)) {
    throw new AppError(402, 'plan_limit_reached', `account and license views need the Business or Enterprise plan (or a trial); this tenant is on ${tenant.plan}`);
  }
  if (!tenant.account_context_enabled) {
    throw new AppError(403, 'account_context_disabled', 'account context is disabled for this tenant (operator setting account_context_enabled)');
  }
};
