import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { revokeAccess } from '../../../lib/access/tokens.js';
import { revokeTokenRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** DELETE /api/v1/keys/tokens/{tokenId} — revokes a decrypt token and frees its slot. */
export const revoke = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  revokeAccess(deps, {
    tokenId: request.params.tokenId,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await revoke(deps, request) }));

export const handler = awsHandler(route, createHandler);
