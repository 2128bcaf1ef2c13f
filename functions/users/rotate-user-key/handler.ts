import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { rotateUserKey } from '../../../lib/users/lifecycle.js';
import { rotateUserKeyRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/users/{userId}/key — binds the user to another key this issuer generated. */
export const rotate = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  rotateUserKey(deps, {
    userId: request.params.userId,
    keyId: request.body.keyId,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await rotate(deps, request) }));

export const handler = awsHandler(route, createHandler);
