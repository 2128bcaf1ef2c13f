import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { matchReceipts } from '../../../lib/receipts/match.js';
import { matchReceiptsRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/users/{userId}/receipts/match — the user's receipts that its card transactions match. */
export const matchUserReceipts = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  matchReceipts(deps, {
    ...request.body,
    userId: request.params.userId,
    caller: request.caller,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await matchUserReceipts(deps, request) }));

export const handler = awsHandler(route, createHandler);
