import * as z from 'zod';
import { defineRoute } from '../contract/route.js';
import { dateTime } from '../receipts/schemas.js';
import { platformTables } from './platform.js';

export const webhookIdParam = z.string().regex(/^wh_[a-z2-7]{26}$/, 'must be a webhook id (wh_…)');
export const deliveryIdParam = z.string().regex(/^msg_[a-z2-7]{26}$/, 'must be a delivery id (msg_…)');

export const deliveryAttemptSchema = z
  .strictObject({
    at: dateTime,
    durationMs: z.number().int().min(0),
    httpStatus: z.number().int().optional(),
    error: z.string().optional(),
  })
  .meta({
    id: 'WebhookDeliveryAttempt',
    description:
      "One attempt: when it was made, how long it took, and the receiver's HTTP status, or why there was none " +
      '(`timeout`, `connection_refused`, `tls`, `connection`, `url_refused: <reason>` when the URL was refused at ' +
      'delivery, `webhook_deleted`).',
  });

export const webhookDeliverySchema = z
  .strictObject({
    deliveryId: z.string(),
    webhookId: z.string(),
    eventType: z.enum(['receipt.available', 'receipt.escrowed']),
    status: z.enum(['pending', 'succeeded', 'failed']),
    attemptCount: z.number().int().min(0),
    nextAttemptAt: dateTime.nullable(),
    attempts: z.array(deliveryAttemptSchema),
    createdAt: dateTime,
  })
  .meta({
    id: 'WebhookDelivery',
    description:
      'One event for one webhook. `deliveryId` is the `webhook-id` header of every attempt. Pending deliveries are ' +
      'attempted immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; a 2xx within 10 s succeeds; ' +
      'after the eighth failed attempt the delivery is failed. `nextAttemptAt` is set while pending.',
  });

export const webhookDeliveryPageSchema = z
  .strictObject({
    deliveries: z.array(webhookDeliverySchema),
    nextCursor: z.string().nullable(),
  })
  .meta({
    id: 'WebhookDeliveryPage',
    description: 'Newest first; pass `nextCursor` as `cursor` for the next page (null on the last one).',
  });

export const listWebhookDeliveriesRoute = defineRoute({
  name: 'list-webhook-deliveries',
  method: 'GET',
  path: '/api/v1/webhooks/{webhookId}/deliveries',
  entry: 'functions/list-webhook-deliveries/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'read', webhookDeliveries: 'read' },
  docs: {
    tag: 'webhooks',
    summary: "List a webhook's deliveries",
    description:
      "The webhook's deliveries, newest first, with every attempt and its outcome. Only the client that registered " +
      'the webhook sees them; anyone else gets the same 404 as for an unknown webhook. The payload and the ' +
      'signing secret are not shown.',
  },
  request: {
    params: z.object({ webhookId: webhookIdParam }),
    query: z.object({
      limit: z.coerce
        .number({ message: 'must be a number from 1 to 100' })
        .int('must be a number from 1 to 100')
        .min(1, 'must be a number from 1 to 100')
        .max(100, 'must be a number from 1 to 100')
        .default(25),
      cursor: z.string().max(1024).optional(),
    }),
  },
  response: { description: 'A page of deliveries.', schema: webhookDeliveryPageSchema, enveloped: true },
  errors: {
    400: { description: 'webhookId, limit or cursor is not valid.' },
    404: { description: 'No such webhook, or not registered by this client.' },
  },
});
