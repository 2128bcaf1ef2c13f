import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { kidSchema, signingKeySchema } from '../../../lib/merchants/schemas.js';

export const revokeSigningKeyRoute = defineRoute({
  name: 'revoke-signing-key',
  method: 'DELETE',
  path: '/api/v1/merchants/signing-keys/{kid}',
  entry: 'functions/merchants/revoke-signing-key/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Revoke a receipt signing key',
    description:
      'Revokes one of this client’s signing keys at once: a request signed with it from now on is 400 ' +
      'invalid_signature. The key stays readable with its revocation time (receipts signed before name it). ' +
      'Revoking it again keeps the first time. Another client’s key is the same 404 as an unknown one.',
    details:
      "A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant, the key's " +
      'owner) → `200` the key, `status: "revoked"`, `revokedAt`. At once: from then on a request ' +
      'signed with it is `400 invalid_signature`. Revoking again keeps the first time; another ' +
      "client's key is the `404` of an unknown one. Revoking is allowed whatever the policy: a leaked " +
      'key must stop now.',
  },
  request: { params: z.object({ kid: kidSchema }) },
  response: { description: 'The revoked key.', schema: signingKeySchema, enveloped: true },
  errors: {
    400: { description: 'kid is not a kid.' },
    404: { description: 'No such key of this merchant client.' },
  },
});
