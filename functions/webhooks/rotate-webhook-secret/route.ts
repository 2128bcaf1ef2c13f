import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { dateTime } from '../../../lib/kernel/fields.js';
import { webhookIdSchema } from '../../../lib/webhooks/schemas.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const rotatedWebhookSecretSchema = lazySchema(() =>
  z
    .strictObject({
      webhookId: webhookIdSchema,
      secret: z
        .string()
        .regex(/^whsec_/)
        .meta({ description: 'The new signing secret, shown only now.' }),
      previousSecretExpiresAt: dateTime.meta({
        description:
          'Until then every event is signed with both secrets (two signatures in webhook-signature).',
      }),
    })
    .meta({ id: 'RotatedWebhookSecret', description: 'The new secret and the end of the overlap.' }),
);

export const rotateWebhookSecretRoute = defineRoute({
  name: 'rotate-webhook-secret',
  method: 'POST',
  path: '/api/v1/webhooks/{webhookId}/rotate-secret',
  entry: 'functions/webhooks/rotate-webhook-secret/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'write' },
  docs: {
    tag: 'webhooks',
    summary: "Rotate a webhook's secret",
    description:
      'Makes a new signing secret. The secret it replaces keeps signing beside it for 24 hours, so a receiver ' +
      'verifies with either while it switches; a second rotation within those hours ends the oldest secret at ' +
      'once. Another client’s webhook is the same 404 as an unknown one. Send no body.',
    details:
      "Each client sees and changes only its own webhooks (another client's is the `404` of an unknown " +
      'id). No body; answers `{ webhookId, secret, previousSecretExpiresAt }`: the new `secret` is ' +
      'shown here only, and the old secret keeps signing beside the new one until ' +
      '`previousSecretExpiresAt` (24 h), so verify with either while you switch; a second rotation in ' +
      'that window ends the oldest secret at once.',
  },
  request: { params: z.object({ webhookId: webhookIdSchema }) },
  response: { description: 'The new secret.', schema: rotatedWebhookSecretSchema, enveloped: true },
  errors: {
    400: { description: 'webhookId is not a webhook id.' },
    404: { description: 'No such webhook, or not registered by this client.' },
  },
});
