import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type EndpointRequest } from '../../../lib/http/pipeline.js';
import { receiveGatewayEvent } from '../../../lib/payments/gateway-events.js';
import { gatewayEventsRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** POST /api/v1/gateways/{gateway}/events — a provider's own webhook, verified by its SDK, applied once. */
export const receiveEvent = (deps: AppDeps, request: EndpointRequest<typeof route>) =>
  receiveGatewayEvent(deps, {
    gateway: request.params.gateway,
    rawBody: request.body,
    headers: {
      'stripe-signature': request.headers['Stripe-Signature'],
      'x-square-hmacsha256-signature': request.headers['X-Square-HmacSha256-Signature'],
    },
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
    budget: route.keylessBudget,
    counted: (state) => {
      request.meta.rateLimit = state;
    },
  });

export const createHandler = (deps: AppDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await receiveEvent(deps, request) }));

export const handler = awsHandler(route, createHandler);
