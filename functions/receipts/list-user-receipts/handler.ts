import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { listUserReceipts } from '../../../lib/receipts/inbox.js';
import { listUserReceiptsRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/users/{userId}/receipts — the user's inbox, for the issuer that registered the user. */
export const listReceipts = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  listUserReceipts(deps, {
    userId: request.params.userId,
    limit: request.query.limit,
    cursor: request.query.cursor,
    caller: request.caller,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await listReceipts(deps, request) }));

export const handler = awsHandler(route, createHandler);
