import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { generateKeyPairFor } from '../../../lib/onboarding/onboarding.js';
import { generateKeysRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/onboarding/generate-keys — no body; the private key is in this response and nowhere else. */
export const generateKeys = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  generateKeyPairFor(deps, request.caller, request.meta.requestId);

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await generateKeys(deps, request) }));

export const handler = awsHandler(route, createHandler);
