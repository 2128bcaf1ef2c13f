import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { createRefund } from '../../../lib/payments/refunds.js';
import { createRefundRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/payments/{gateway}/{paymentId}/refunds — refund a payment this merchant made. */
export const refundPayment = (deps: AppDeps, request: AuthenticatedRequest<typeof route>) =>
  createRefund(deps, {
    gateway: request.params.gateway,
    paymentId: request.params.paymentId,
    body: request.body,
    caller: request.caller,
    requestId: request.meta.requestId,
    signature: request.headers['Receipt-Signature'],
  });

export const createHandler = (deps: AppDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await refundPayment(deps, request) }));

export const handler = awsHandler(route, createHandler);
