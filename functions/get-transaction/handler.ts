import * as z from 'zod';
import type { CoreDeps } from '../../lib/deps.js';
import { InvalidRequestError } from '../../lib/errors.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { getTransaction } from '../../lib/receipts/transactions.js';
import { uuid } from '../../lib/receipts/schemas.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';

const transactionIdParam = z.object({ transactionId: uuid });

/** GET /api/v1/transactions/{transactionId} — for the merchant that stored it or its recipient's issuer. */
export const readTransaction = (deps: CoreDeps, request: AuthenticatedRequest<undefined>) => {
  const params = transactionIdParam.safeParse(request.pathParameters);
  if (!params.success) {
    throw new InvalidRequestError('Invalid path parameter', [
      { field: 'transactionId', message: 'must be a UUID string' },
    ]);
  }
  return getTransaction(deps, params.data.transactionId, request.caller);
};

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint({ route: findRoute('get-transaction'), deps }, async (request) => ({
    data: await readTransaction(deps, request),
  }));

export const handler = lambdaHandler(() => createHandler(awsCoreDeps()));
