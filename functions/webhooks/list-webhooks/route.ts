import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { dateTime } from '../../../lib/kernel/fields.js';
import { webhookEventSchema, webhookIdSchema } from '../../../lib/webhooks/schemas.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const webhookSummarySchema = lazySchema(() =>
  z
    .strictObject({
      webhookId: webhookIdSchema,
      url: z.string(),
      events: z.array(webhookEventSchema),
      createdAt: dateTime,
      previousSecretExpiresAt: dateTime.nullable().meta({
        description: 'During a rotation overlap: when the previous secret stops signing. Else null.',
      }),
    })
    .meta({ id: 'Webhook', description: 'A registered webhook, without its secret.' }),
);

export const webhookListSchema = lazySchema(() =>
  z
    .strictObject({ webhooks: z.array(webhookSummarySchema) })
    .meta({ id: 'WebhookList', description: "The client's webhooks, oldest first." }),
);

export const listWebhooksRoute = defineRoute({
  name: 'list-webhooks',
  method: 'GET',
  path: '/api/v1/webhooks',
  entry: 'functions/webhooks/list-webhooks/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'read' },
  docs: {
    tag: 'webhooks',
    summary: 'List webhooks',
    description:
      "The webhooks this API client registered, without their secrets. Other clients' are never shown.",
    details:
      "Each client sees and changes only its own webhooks (another client's is the `404` of an unknown " +
      'id). Answers `{ webhooks: [{ webhookId, url, events, createdAt, previousSecretExpiresAt }] }`, ' +
      'no secrets.',
  },
  request: {},
  response: { description: "The client's webhooks.", schema: webhookListSchema, enveloped: true },
  errors: {},
});
