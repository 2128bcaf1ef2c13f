import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import type { CoreDeps } from '../../lib/deps.js';
import { generateKeyPairFor } from '../../lib/receipts/onboarding.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';

/** POST /api/v1/onboarding/generate-keys — no body; the private key is in this response and nowhere else. */
export const generateKeys = (deps: CoreDeps, request: AuthenticatedRequest<undefined>) =>
  generateKeyPairFor(deps, request.caller, request.meta.requestId);

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint({ route: findRoute('generate-keys'), deps }, async (request) => ({
    data: await generateKeys(deps, request),
  }));

export const handler = lambdaHandler(() => createHandler(awsCoreDeps()));
