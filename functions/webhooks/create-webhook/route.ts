import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';

import { dateTime } from '../../../lib/kernel/fields.js';
import { maxWebhooksPerClient } from '../../../lib/webhooks/registration.js';

import { platformTables } from '../../../lib/kernel/route-tables.js';
import { webhookEventSchema, webhookIdSchema } from '../../../lib/webhooks/schemas.js';
import { createWebhookBody } from '../../../lib/webhooks/schemas.js';

const webhookSecret = lazySchema(() =>
  z
    .string()
    .regex(/^whsec_/)
    .meta({
      description:
        'The Standard Webhooks signing secret (whsec_ + base64 of 32 bytes). Shown only when it is made: store it.',
    }),
);

export const createdWebhookSchema = lazySchema(() =>
  z
    .strictObject({
      webhookId: webhookIdSchema,
      url: z.string(),
      events: z.array(webhookEventSchema),
      secret: webhookSecret,
      createdAt: dateTime,
    })
    .meta({ id: 'CreatedWebhook', description: 'The new webhook and its signing secret.' }),
);

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
    details:
      "Merchant or issuer; each client sees and changes only its own webhooks (another client's is the " +
      '`404` of an unknown id). `POST /webhooks` `{ url, events }` → `201 { webhookId, url, events, ' +
      'secret, createdAt }`: `secret` (`whsec_…`, Standard Webhooks) is shown here and on rotation ' +
      'only. `receipt.available` needs the issuer role, `receipt.escrowed` the merchant role (`403` ' +
      'naming it), `receipt.updated` either. The URL must be `https` to a host that is, and resolves ' +
      'only to, public addresses: private, loopback, link-local (169.254.169.254, the cloud metadata ' +
      'address, included), unique-local, CGNAT, unspecified, multicast, broadcast and reserved ranges, ' +
      'and IPv6 forms carrying such IPv4 addresses, are refused with `400` naming the reason ' +
      '(`error.details.fields[0]`); an IPv6 address that embeds an IPv4 one (`[::ffff:a.b.c.d]`, and ' +
      'the deprecated `[::a.b.c.d]`) is judged as that IPv4 address. Plain `http` is accepted only to ' +
      'loopback (`http://127.0.0.1:…`) and only on the local stack: that exception is passed in by the ' +
      "local stack's own wiring (`local/webhook-url-guard.ts`), no deployed function has it whatever " +
      'its stage, and a deployment named like the local stage is refused at synth. The check runs ' +
      'again before every delivery. A client may have 10 webhooks (`409 WEBHOOK_LIMIT_REACHED` beyond; ' +
      'delete one first). A new webhook receives the events the dispatcher raises from then on: those ' +
      'of receipts stored after it, and possibly of receipts stored moments before it while the ' +
      'dispatcher was catching up (delivery is at least once, never "exactly the ones after ' +
      'registration"). Deduplicate by `webhook-id`, and list the inbox for what came before.',
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
