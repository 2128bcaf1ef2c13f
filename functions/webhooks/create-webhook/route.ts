import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';

import { dateTime } from '../../../lib/kernel/fields.js';
import { maxWebhooksPerClient } from '../../../lib/webhooks/registration.js';

import { platformTables } from '../../../lib/kernel/route-tables.js';
import { webhookEventSchema, webhookIdSchema } from '../../../lib/webhooks/schemas.js';
import { createWebhookBody } from '../../../lib/webhooks/schemas.js';

const webhookSecret = z
  .string()
  .regex(/^whsec_/)
  .meta({
    description:
      'The Standard Webhooks signing secret (whsec_ + base64 of 32 bytes). Shown only when it is made: store it.',
  });

export const createdWebhookSchema = z
  .strictObject({
    webhookId: webhookIdSchema,
    url: z.string(),
    events: z.array(webhookEventSchema),
    secret: webhookSecret,
    createdAt: dateTime,
  })
  .meta({ id: 'CreatedWebhook', description: 'The new webhook and its signing secret.' });

export const createWebhookRoute = defineRoute({
  name: 'create-webhook',
  method: 'POST',
  path: '/api/v1/webhooks',
  entry: 'functions/webhooks/create-webhook/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'write' },
  docs: {
    tag: 'webhooks',
    summary: 'Register a webhook',
    description:
      'Registers an endpoint for signed events (Standard Webhooks: webhook-id, webhook-timestamp and ' +
      'webhook-signature headers, HMAC-SHA256). receipt.available needs the issuer role, receipt.escrowed the ' +
      'merchant role, and receipt.updated either. The URL is checked now and again before every delivery: https only, and refused when its ' +
      'host is or resolves to a private, loopback, link-local (the cloud metadata address), unique-local, CGNAT, ' +
      `multicast or reserved address. A client may have ${maxWebhooksPerClient} webhooks. The secret is answered ` +
      'here and on rotation only.',
  },
  request: { body: { description: 'Where to send which events.', schema: createWebhookBody } },
  response: {
    description: 'The webhook and its secret.',
    schema: createdWebhookSchema,
    enveloped: true,
    status: 201,
  },
  errors: {
    400: {
      description: 'Invalid body, or a URL refused by the URL check (details.fields names the reason).',
    },
    403: { description: 'An event the API key’s roles may not subscribe to (the message names the role).' },
    409: {
      description: `The client already has ${maxWebhooksPerClient} webhooks.`,
      codes: ['WEBHOOK_LIMIT_REACHED'],
    },
  },
});
