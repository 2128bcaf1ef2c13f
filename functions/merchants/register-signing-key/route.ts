import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { registerSigningKeyBody, signingKeySchema } from '../../../lib/merchants/schemas.js';

export const registerSigningKeyRoute = defineRoute({
  name: 'register-signing-key',
  method: 'POST',
  path: '/api/v1/merchants/signing-keys',
  entry: 'functions/merchants/register-signing-key/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Register a receipt signing key',
    description:
      'Registers the public half of a key the merchant signs receipts with (Receipt-Signature): Ed25519 or ' +
      "P-256 as a JWK. Its kid is the key's RFC 7638 thumbprint. The key belongs to this merchant client: no " +
      'other client can sign with it or register it. Registering the same key again answers the same key. At ' +
      'most 20 active keys per merchant client.',
  },
  request: {
    body: { description: 'The public key.', schema: registerSigningKeyBody },
  },
  response: { description: 'The key.', schema: signingKeySchema, enveloped: true, status: 201 },
  errors: {
    400: {
      description:
        'The key is refused, the problem named in details.fields: private members (d), a key type or curve ' +
        'other than Ed25519 and P-256, a point not on its curve, a weak (small- or mixed-order) Ed25519 key, a ' +
        'kid other than its thumbprint.',
    },
    409: {
      description:
        'The key is registered by another merchant client, or was revoked; or this client has 20 active keys.',
      codes: ['CONFLICT'],
    },
  },
});
