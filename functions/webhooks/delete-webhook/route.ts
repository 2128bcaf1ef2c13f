import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { webhookIdSchema } from '../../../lib/webhooks/schemas.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const deletedWebhookSchema = lazySchema(() =>
  z
    .strictObject({ webhookId: webhookIdSchema, deleted: z.literal(true) })
    .meta({ id: 'DeletedWebhook', description: 'The webhook is gone: no event is sent to it from now on.' }),
);

export const deleteWebhookRoute = defineRoute({
  name: 'delete-webhook',
  method: 'DELETE',
  path: '/api/v1/webhooks/{webhookId}',
  entry: 'functions/webhooks/delete-webhook/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, webhooks: 'write' },
  docs: {
    tag: 'webhooks',
    summary: 'Delete a webhook',
    description:
      'Deletes one of this client’s webhooks; pending deliveries to it stop. Another client’s webhook is the ' +
      'same 404 as an unknown one.',
    details:
      "Each client sees and changes only its own webhooks (another client's is the `404` of an unknown " +
      'id). Answers `{ webhookId, deleted: true }`.',
  },
  request: { params: z.object({ webhookId: webhookIdSchema }) },
  response: { description: 'The webhook was deleted.', schema: deletedWebhookSchema, enveloped: true },
  errors: {
    400: { description: 'webhookId is not a webhook id.' },
    404: { description: 'No such webhook, or not registered by this client.' },
  },
});
