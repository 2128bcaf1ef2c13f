import type { AppDeps } from '../../lib/deps.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { registerUser } from '../../lib/receipts/onboarding.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { awsEscrowKey } from '../../lib/wiring/aws-escrow.js';
import { registerBody, type RegisterBody } from './schema.js';

type RegisterDeps = Omit<AppDeps, 'gateways'>;

/** POST /api/v1/onboarding/register — binds a hashedPan to a key this issuer generated. */
export const register = async (deps: RegisterDeps, request: AuthenticatedRequest<RegisterBody>) => {
  const { user } = await registerUser(deps, request.caller, request.body, request.meta.requestId);
  return { userId: user.userId, status: user.status, registeredAt: user.registeredAt };
};

export const createHandler = (deps: RegisterDeps) =>
  httpEndpoint({ route: findRoute('register'), deps, body: registerBody }, async (request) => ({
    data: await register(deps, request),
  }));

export const handler = lambdaHandler(() => {
  const core = awsCoreDeps();
  return createHandler({ ...core, escrow: awsEscrowKey(core.config) });
});
