import type { CoreDeps } from '../../lib/deps.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { grantAccess } from '../../lib/receipts/access.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { grantAccessBody, type GrantAccessBody } from './schema.js';

/** POST /api/v1/keys/grant-access — a short-lived decrypt token; the caller's source IP is audited. */
export const grant = (deps: CoreDeps, request: AuthenticatedRequest<GrantAccessBody>) =>
  grantAccess(deps, {
    ...request.body,
    caller: request.caller,
    sourceIp: request.meta.sourceIp,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint({ route: findRoute('grant-access'), deps, body: grantAccessBody }, async (request) => ({
    data: await grant(deps, request),
  }));

export const handler = lambdaHandler(() => createHandler(awsCoreDeps()));
