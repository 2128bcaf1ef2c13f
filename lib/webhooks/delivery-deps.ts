import type { CoreDeps } from '../app/deps.js';
import type { DeliveryDeps } from './send.js';
import { nodeTransport, type WebhookTransport } from './transport.js';
import { webhookUrlGuardOf } from './url-guard.js';

/**
 * Delivery's needs from the service's deps: the same for the stream function, the sweeper, the retry
 * route and the local poller. The URL guard is the service's strict one unless the wiring passed another
 * (the local stack's, for its loopback receivers).
 */
export const deliveryDeps = (core: CoreDeps, transport: WebhookTransport = nodeTransport): DeliveryDeps => ({
  clock: core.clock,
  logger: core.logger,
  telemetry: core.telemetry,
  webhooks: core.repos.webhooks,
  deliveries: core.repos.webhookDeliveries,
  // Read on first use: the sweeper is not granted the users table and never looks a user up.
  users: { getById: (userId) => core.repos.users.getById(userId) },
  transport,
  checkUrl: webhookUrlGuardOf(core),
});
