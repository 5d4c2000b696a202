import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { requireFeature } from '../../query/guard.js';
import { principalOf } from './auth.js';

/**
 * After the key and its view_accounts permission (401, then 403): the plan (402
 * plan_limit_reached unless Business, Enterprise, Trial or Unlimited), then the tenant's account
 * context setting (403 account_context_disabled). This order is fixed and tested; the rule is the
 * query layer's one guard (src/query/guard.ts).
 */
export const requireAccountPlan: onRequestAsyncHookHandler = async (request: FastifyRequest) => {
  requireFeature(principalOf(request).tenant, 'account_context');
};
