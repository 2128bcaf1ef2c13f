import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { registerUser } from '../../../lib/onboarding/onboarding.js';
import { registerRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

type RegisterDeps = CoreDeps;

/** POST /api/v1/onboarding/register — binds a hashedPan to a key this issuer generated. */
export const register = async (deps: RegisterDeps, request: AuthenticatedRequest<typeof route>) => {
  const { user } = await registerUser(deps, request.caller, request.body, request.meta.requestId);
  return { userId: user.userId, status: user.status, registeredAt: user.registeredAt };
};

export const createHandler = (deps: RegisterDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await register(deps, request) }));

export const handler = awsHandler(route, createHandler);
