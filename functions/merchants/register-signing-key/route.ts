import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import * as z from 'zod';
import {
  keyChangeProofHeader,
  registerSigningKeyBody,
  signingKeySchema,
} from '../../../lib/merchants/schemas.js';

export const registerSigningKeyRoute = defineRoute({
  name: 'register-signing-key',
  method: 'POST',
  path: '/api/v1/merchants/signing-keys',
  entry: 'functions/merchants/register-signing-key/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite', webhooks: 'read', webhookDeliveries: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Register a receipt signing key',
    description:
      'Registers the public half of a key the merchant signs receipts with (Receipt-Signature): Ed25519 or ' +
      "P-256 as a JWK. Its kid is the key's RFC 7638 thumbprint. The key belongs to this merchant client: no " +
      'other client can sign with it or register it. Registering the same key again answers the same key. At ' +
      'most 20 active keys per merchant client. The request proves possession of the key (`proof`), and once ' +
      'this client has an active key, a Key-Change-Proof by one of them (action add-key) is needed too: the API ' +
      'key alone no longer adds keys. A key another client registered before proofs were required is taken over ' +
      'by the client that proves it holds it. Audited, and announced to your webhooks (merchant.keys.changed).',
  },
  request: {
    headers: z.object({ 'Key-Change-Proof': keyChangeProofHeader.optional() }),
    body: { description: 'The public key and its proof of possession.', schema: registerSigningKeyBody },
  },
  response: { description: 'The key.', schema: signingKeySchema, enveloped: true, status: 201 },
  errors: {
    400: {
      description:
        'The key is refused, the problem named in details.fields: private members (d), a key type or curve ' +
        'other than Ed25519 and P-256, a point not on its curve, a weak (small- or mixed-order) Ed25519 key, a ' +
        'kid other than its thumbprint; `proof` missing or wrong, or its nonce unknown, used or expired ' +
        '(details.reason).',
    },
    403: {
      description:
        'This client has an active key and the Key-Change-Proof is missing or wrong (details.reason).',
      codes: ['KEY_CHANGE_PROOF_REQUIRED'],
    },
    409: {
      description:
        'Another merchant client proved it holds this key (make a new one), or it was revoked; or this client ' +
        'has 20 active keys.',
      codes: ['CONFLICT'],
    },
  },
});
