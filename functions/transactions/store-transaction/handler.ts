import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { storeTransaction } from '../../../lib/transactions/transactions.js';
import { storeTransactionRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/transactions — maps a transaction to a receipt; storing it again returns the first mapping. */
export const storeTransactionMapping = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  storeTransaction(deps, {
    envelope: request.body.envelope,
    paymentGateway: request.body.paymentGateway,
    metadata: request.body.metadata ?? {},
    caller: request.caller,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await storeTransactionMapping(deps, request) }));

export const handler = awsHandler(route, createHandler);
