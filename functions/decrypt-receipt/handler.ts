import type { CoreDeps } from '../../lib/deps.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { decryptForCaller } from '../../lib/receipts/decrypt.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { decryptReceiptBody, type DecryptReceiptBody } from './schema.js';

/** POST /api/v1/receipts/decrypt — every failure is the same 403 DECRYPTION_ERROR. */
export const decryptReceipt = (deps: CoreDeps, request: AuthenticatedRequest<DecryptReceiptBody>) =>
  decryptForCaller(deps, {
    ...request.body,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
    action: 'receipt.decrypt',
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint({ route: findRoute('decrypt-receipt'), deps, body: decryptReceiptBody }, async (request) => ({
    data: await decryptReceipt(deps, request),
  }));

export const handler = lambdaHandler(() => createHandler(awsCoreDeps()));
