import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { deleteWebhookRoute as route } from './route.js';
import { deleteWebhook } from '../../../lib/webhooks/registration.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** DELETE /api/v1/webhooks/{webhookId} — only the client that registered it. */
export const removeWebhook = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  deleteWebhook(deps, {
    webhookId: request.params.webhookId,
    caller: request.caller,
    requestId: request.meta.requestId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await removeWebhook(deps, request) }));

export const handler = awsHandler(route, createHandler);
