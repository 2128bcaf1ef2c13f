import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { listWebhooksRoute as route } from './route.js';
import { listWebhooks } from '../../../lib/webhooks/registration.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/webhooks — the caller's webhooks, without secrets. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await listWebhooks(deps, request.caller) }));

export const handler = awsHandler(route, createHandler);
