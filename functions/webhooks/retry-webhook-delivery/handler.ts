import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { retryWebhookDeliveryRoute as route } from './route.js';
import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import { retryDelivery } from '../../../lib/webhooks/deliveries-api.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/retry — attempts the delivery now. */
export const retryWebhookDelivery = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  retryDelivery(deliveryDeps(deps), {
    webhookId: request.params.webhookId,
    deliveryId: request.params.deliveryId,
    clientId: request.caller.clientId,
  });

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await retryWebhookDelivery(deps, request) }));

export const handler = awsHandler(route, createHandler);
