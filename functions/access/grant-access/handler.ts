import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { grantAccess } from '../../../lib/access/tokens.js';
import { grantAccessRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/keys/grant-access — a short-lived decrypt token; the caller's source IP is audited. */
export const grant = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  grantAccess(deps, {
    ...request.body,
    caller: request.caller,
    sourceIp: request.meta.sourceIp,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await grant(deps, request) }));

export const handler = awsHandler(route, createHandler);
