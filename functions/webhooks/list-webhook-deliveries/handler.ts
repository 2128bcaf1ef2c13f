import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { listWebhookDeliveriesRoute as route } from './route.js';
import { listDeliveries } from '../../../lib/webhooks/deliveries-api.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/webhooks/{webhookId}/deliveries — for the client that registered the webhook. */
export const listWebhookDeliveries = (deps: CoreDeps, request: AuthenticatedRequest<typeof route>) =>
  listDeliveries(
    { webhooks: deps.repos.webhooks, deliveries: deps.repos.webhookDeliveries, cursors: deps.cursors },
    {
      webhookId: request.params.webhookId,
      clientId: request.caller.clientId,
      limit: request.query.limit,
      cursor: request.query.cursor,
    },
  );

export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await listWebhookDeliveries(deps, request) }));

export const handler = awsHandler(route, createHandler);
