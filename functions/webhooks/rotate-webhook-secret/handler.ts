import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { rotateWebhookSecretRoute as route } from './route.js';
import { rotateWebhookSecret } from '../../../lib/webhooks/registration.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/webhooks/{webhookId}/rotate-secret — a new secret; the old one signs for 24 h more. */
export const rotateSecret = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  rotateWebhookSecret(deps, {
    webhookId: request.params.webhookId,
    caller: request.caller,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await rotateSecret(deps, request) }));

export const handler = awsHandler(route, createHandler);
