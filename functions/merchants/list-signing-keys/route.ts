import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { signingKeyListSchema } from '../../../lib/merchants/schemas.js';

export const listSigningKeysRoute = defineRoute({
  name: 'list-signing-keys',
  method: 'GET',
  path: '/api/v1/merchants/signing-keys',
  entry: 'functions/merchants/list-signing-keys/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'read' },
  docs: {
    tag: 'merchants',
    summary: 'List receipt signing keys',
    description:
      "This merchant client's signing keys, revoked ones included, and whether it requires signatures. " +
      "Other clients' keys are never listed (each is readable alone by its kid: GET /api/v1/merchant-keys/{kid}).",
    details:
      'A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant) → `{ ' +
      "signingKeys: [SigningKey], requireSignatures }`, this client's own, revoked ones included, " +
      'oldest first.',
  },
  request: {},
  response: { description: 'The keys and the policy.', schema: signingKeyListSchema, enveloped: true },
  errors: {},
});
