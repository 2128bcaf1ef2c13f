import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { decryptForCaller } from '../../../lib/receipts/decrypt.js';
import { decryptReceiptRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/receipts/decrypt — every failure is the same 403 DECRYPTION_ERROR. */
export const decryptReceipt = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  decryptForCaller(deps, {
    ...request.body,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
    action: 'receipt.decrypt',
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await decryptReceipt(deps, request) }));

export const handler = awsHandler(route, createHandler);
