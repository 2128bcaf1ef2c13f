import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { pagingCursor } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { webhookDeliverySchema, webhookIdParam } from '../../../lib/webhooks/schemas.js';

export const webhookDeliveryPageSchema = lazySchema(() =>
  z
    .strictObject({
      deliveries: z.array(webhookDeliverySchema),
      nextCursor: z.string().nullable(),
    })
    .meta({
      id: 'WebhookDeliveryPage',
      description: 'Newest first; pass `nextCursor` as `cursor` for the next page (null on the last one).',
    }),
);

export const listWebhookDeliveriesRoute = defineRoute({
  name: 'list-webhook-deliveries',
  method: 'GET',
  path: '/api/v1/webhooks/{webhookId}/deliveries',
  entry: 'functions/webhooks/list-webhook-deliveries/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'read', webhookDeliveries: 'read' },
  cursors: true,
  docs: {
    tag: 'webhooks',
    summary: "List a webhook's deliveries",
    description:
      "The webhook's deliveries, newest first, with every attempt and its outcome. A delivery is listed from its " +
      'first attempt on (usually within seconds of its event; one whose first attempt could not be recorded, from ' +
      'when it is due again). Only the client that registered ' +
      'the webhook sees them; anyone else gets the same 404 as for an unknown webhook. The payload and the ' +
      'signing secret are not shown.',
  },
  request: {
    params: lazySchema(() => z.object({ webhookId: webhookIdParam })),
    query: lazySchema(() =>
      z.object({
        limit: z.coerce
          .number({ message: 'must be a number from 1 to 100' })
          .int('must be a number from 1 to 100')
          .min(1, 'must be a number from 1 to 100')
          .max(100, 'must be a number from 1 to 100')
          .default(25),
        cursor: pagingCursor('webhook'),
      }),
    ),
  },
  response: { description: 'A page of deliveries.', schema: webhookDeliveryPageSchema, enveloped: true },
  errors: {
    400: {
      description:
        'webhookId or limit is not valid (INVALID_REQUEST), or the cursor was not returned by this endpoint for ' +
        'this webhook and client (INVALID_CURSOR).',
      codes: ['INVALID_CURSOR'],
    },
    404: { description: 'No such webhook, or not registered by this client.' },
  },
});
