import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { listRefunds } from '../../../lib/payments/refunds.js';
import { listRefundsRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/payments/{gateway}/{paymentId}/refunds — the refunds of a payment this merchant made. */
export const listPaymentRefunds = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  listRefunds(deps, { ...request.params, caller: request.caller });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await listPaymentRefunds(deps, request) }));

export const handler = awsHandler(route, createHandler);
