import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { getReceipt } from '../../../lib/receipts/inbox.js';
import { getReceiptRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/receipts/{receiptId} — the stored envelope, for its merchant or its recipient's issuer. */
export const fetchReceipt = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  getReceipt(deps, request.params.receiptId, request.caller, request.query.merchantId);

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await fetchReceipt(deps, request) }));

export const handler = awsHandler(route, createHandler);
