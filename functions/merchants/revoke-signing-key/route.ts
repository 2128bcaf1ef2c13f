import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { keyChangeProofHeader, kidSchema, signingKeySchema } from '../../../lib/merchants/schemas.js';

export const revokeSigningKeyRoute = defineRoute({
  name: 'revoke-signing-key',
  method: 'DELETE',
  path: '/api/v1/merchants/signing-keys/{kid}',
  entry: 'functions/merchants/revoke-signing-key/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: {
    ...platformTables,
    merchantKeys: 'readWrite',
    webhooks: 'read',
    webhookDeliveries: 'readWrite',
    keyLog: 'readWrite',
  },
  docs: {
    tag: 'merchants',
    summary: 'Revoke a receipt signing key',
    description:
      'Revokes one of this client’s signing keys at once: a request signed with it from now on is 400 ' +
      'invalid_signature. The key stays readable with its revocation time (receipts signed before name it). ' +
      'Revoking it again keeps the first time. Another client’s key is the same 404 as an unknown one. Needs a ' +
      'Key-Change-Proof (action revoke-key) by an active key of this client, which may be the key revoked. ' +
      'Audited, and announced to your webhooks (merchant.keys.changed). Lost every key? The operator can reset ' +
      'them (`npm run admin -- merchants reset-keys`).',
    details:
      "A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant, the key's " +
      'owner) → `200` the key, `status: "revoked"`, `revokedAt`. At once: from then on a request ' +
      'signed with it is `400 invalid_signature`. Revoking again keeps the first time; another ' +
      "client's key is the `404` of an unknown one. Revoking is allowed whatever the policy (a leaked " +
      'key must stop now) but needs the `Key-Change-Proof` header (action `revoke-key`, target the kid), ' +
      'else `403 KEY_CHANGE_PROOF_REQUIRED`.',
  },
  request: {
    params: lazySchema(() => z.object({ kid: kidSchema })),
    headers: lazySchema(() => z.object({ 'Key-Change-Proof': keyChangeProofHeader.optional() })),
  },
  response: { description: 'The revoked key.', schema: signingKeySchema, enveloped: true },
  errors: {
    400: { description: 'kid is not a kid.' },
    403: {
      description: 'The Key-Change-Proof is missing or wrong (details.reason): nothing was revoked.',
      codes: ['KEY_CHANGE_PROOF_REQUIRED'],
    },
    404: { description: 'No such key of this merchant client.' },
  },
});
