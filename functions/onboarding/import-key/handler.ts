import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { importKeyFor } from '../../../lib/onboarding/onboarding.js';
import { importKeyRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/onboarding/keys — stores a device's public key; no private key is ever sent or made. */
export const importKey = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  importKeyFor(deps, request.caller, request.body.publicKey, request.meta.requestId);

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await importKey(deps, request) }));

export const handler = awsHandler(route, createHandler);
