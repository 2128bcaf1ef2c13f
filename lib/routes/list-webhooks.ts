import * as z from 'zod';
import { defineRoute } from '../contract/route.js';
import { dateTime } from '../receipts/schemas.js';
import { webhookEventSchema, webhookIdSchema } from './create-webhook.js';
import { platformTables } from './platform.js';

export const webhookSummarySchema = z
  .strictObject({
    webhookId: webhookIdSchema,
    url: z.string(),
    events: z.array(webhookEventSchema),
    createdAt: dateTime,
    previousSecretExpiresAt: dateTime
      .nullable()
      .meta({ description: 'During a rotation overlap: when the previous secret stops signing. Else null.' }),
  })
  .meta({ id: 'Webhook', description: 'A registered webhook, without its secret.' });

export const webhookListSchema = z
  .strictObject({ webhooks: z.array(webhookSummarySchema) })
  .meta({ id: 'WebhookList', description: "The client's webhooks, oldest first." });

export const listWebhooksRoute = defineRoute({
  name: 'list-webhooks',
  method: 'GET',
  path: '/api/v1/webhooks',
  entry: 'functions/list-webhooks/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'read' },
  docs: {
    tag: 'webhooks',
    summary: 'List webhooks',
    description:
      "The webhooks this API client registered, without their secrets. Other clients' are never shown.",
  },
  request: {},
  response: { description: "The client's webhooks.", schema: webhookListSchema, enveloped: true },
  errors: {},
});
