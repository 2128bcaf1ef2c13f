import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { claimEscrowedReceipts } from '../../../lib/receipts/claim.js';
import { claimReceiptsRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

type ClaimReceiptsDeps = Omit<AppDeps, 'gateways'>;

/** POST /api/v1/receipts/claim — releases escrowed receipts that the user's card transactions match. */
export const claimReceipts = (deps: ClaimReceiptsDeps, request: AuthenticatedRequest<typeof route>) =>
  claimEscrowedReceipts(deps, {
    ...request.body,
    caller: request.caller,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: ClaimReceiptsDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await claimReceipts(deps, request) }));

export const handler = awsHandler(route, createHandler);
