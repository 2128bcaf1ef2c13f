import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { eraseUser } from '../../../lib/users/lifecycle.js';
import { eraseUserRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** DELETE /api/v1/users/{userId} — erases the user, its tokens, key bindings and receipts. */
export const erase = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  eraseUser(deps, {
    userId: request.params.userId,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
    remainingMs: () => request.lambdaContext.getRemainingTimeInMillis(),
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await erase(deps, request) }));

export const handler = awsHandler(route, createHandler);
