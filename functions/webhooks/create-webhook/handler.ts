import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { createWebhookRoute as route } from './route.js';
import { createWebhook } from '../../../lib/webhooks/registration.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/webhooks — registers an endpoint for signed events; answers its secret once. */
export const registerWebhook = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  createWebhook(deps, { ...request.body, caller: request.caller, requestId: request.meta.requestId });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await registerWebhook(deps, request) }));

export const handler = awsHandler(route, createHandler);
