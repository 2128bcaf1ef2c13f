import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { webhookEvents } from '../db/webhooks.js';
import { dateTime } from '../kernel/fields.js';
import { maxWebhookUrlLength } from './url-guard.js';

/*
 * The webhook resources as endpoints answer them, shared by the registration and delivery endpoints.
 */
/** 'wh_' + 26 base32 characters (lib/webhooks/registration.ts newWebhookId). */
export const webhookIdSchema = lazySchema(() =>
  z.string().regex(/^wh_[a-z2-7]{26}$/, 'must be a webhook id (wh_…)'),
);

export const webhookEventSchema = lazySchema(() =>
  z.enum(webhookEvents).meta({
    description:
      'receipt.available (issuers: a receipt was wrapped for one of your users), receipt.escrowed ' +
      '(merchants: one of your receipts was escrowed) or receipt.updated (issuers and merchants: a ' +
      "receipt's paymentStatus changed, or a refund receipt was added to a sale) or merchant.keys.changed " +
      '(merchants: a signing key of yours was registered or revoked, or your signing policy changed).',
  }),
);

export const webhookIdParam = webhookIdSchema;
export const deliveryIdParam = lazySchema(() =>
  z.string().regex(/^msg_[a-z2-7]{26}$/, 'must be a delivery id (msg_…)'),
);

export const deliveryAttemptSchema = lazySchema(() =>
  z
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
    }),
);

export const webhookDeliverySchema = lazySchema(() =>
  z
    .strictObject({
      deliveryId: z.string(),
      webhookId: z.string(),
      eventType: z.enum(webhookEvents),
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
    }),
);

export const createWebhookBody = lazySchema(() =>
  z
    .strictObject({
      url: z
        .string()
        .min(1)
        .max(maxWebhookUrlLength)
        .meta({
          description:
            'https URL whose host is and resolves only to public addresses. Plain http to 127.0.0.1 or ::1 is ' +
            'accepted on the local stack only.',
        }),
      events: z
        .array(webhookEventSchema)
        .min(1)
        .max(webhookEvents.length * 2),
    })
    .meta({ id: 'CreateWebhookRequest' }),
);
