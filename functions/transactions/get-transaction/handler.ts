import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { getTransaction } from '../../../lib/transactions/transactions.js';
import { getTransactionRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/transactions/{transactionId} — for the merchant that stored it or its recipient's issuer. */
export const readTransaction = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  getTransaction(deps, request.params.transactionId, request.caller);

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await readTransaction(deps, request) }));

export const handler = awsHandler(route, createHandler);
