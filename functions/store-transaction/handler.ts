import type { CoreDeps } from '../../lib/deps.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { storeTransaction } from '../../lib/receipts/transactions.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { storeTransactionBody, type StoreTransactionBody } from './schema.js';

/** POST /api/v1/transactions — maps a transaction to a receipt; storing it again returns the first mapping. */
export const storeTransactionMapping = (
  deps: CoreDeps,
  request: AuthenticatedRequest<StoreTransactionBody>,
) =>
  storeTransaction(deps, {
    envelope: request.body.envelope,
    paymentGateway: request.body.paymentGateway,
    metadata: request.body.metadata ?? {},
    caller: request.caller,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(
    { route: findRoute('store-transaction'), deps, body: storeTransactionBody },
    async (request) => ({
      data: await storeTransactionMapping(deps, request),
    }),
  );

export const handler = lambdaHandler(() => createHandler(awsCoreDeps()));
