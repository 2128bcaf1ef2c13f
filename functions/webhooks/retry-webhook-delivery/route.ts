import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { deliveryIdParam, webhookDeliverySchema, webhookIdParam } from '../../../lib/webhooks/schemas.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const retryWebhookDeliveryRoute = defineRoute({
  name: 'retry-webhook-delivery',
  method: 'POST',
  path: '/api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/retry',
  entry: 'functions/webhooks/retry-webhook-delivery/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'read', webhookDeliveries: 'readWrite' },
  // One attempt may take the receiver's full 10 s.
  timeoutSeconds: 20,
  docs: {
    tag: 'webhooks',
    summary: 'Send a delivery again',
    description:
      'Attempts the delivery now, with the same `webhook-id` and body and a fresh signature, and answers the ' +
      'delivery as it stands after the attempt. A failed or succeeded delivery becomes pending again with a fresh ' +
      'back-off schedule, so a receiver that was down can be caught up. Only the client that registered the ' +
      'webhook may retry; anyone else gets the same 404 as for an unknown delivery.',
  },
  request: { params: z.object({ webhookId: webhookIdParam, deliveryId: deliveryIdParam }) },
  response: {
    description: 'The delivery after the attempt.',
    schema: webhookDeliverySchema,
    enveloped: true,
  },
  errors: {
    400: { description: 'webhookId or deliveryId is not valid.' },
    404: { description: 'No such webhook or delivery, or not registered by this client.' },
    409: {
      description: 'Another attempt of this delivery is under way; try again in a moment.',
      codes: ['CONFLICT'],
    },
  },
});
