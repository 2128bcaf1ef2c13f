import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import * as z from 'zod';
import {
  keyChangeProofHeader,
  signingPolicyBody,
  signingPolicySchema,
} from '../../../lib/merchants/schemas.js';

export const setSigningPolicyRoute = defineRoute({
  name: 'set-signing-policy',
  method: 'POST',
  path: '/api/v1/merchants/signing-policy',
  entry: 'functions/merchants/set-signing-policy/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite', webhooks: 'read', webhookDeliveries: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Require signed receipts, or stop requiring them',
    description:
      'With requireSignatures: true, every payments/{gateway}/create, receipts/encrypt and refund request of ' +
      'this merchant client must carry Receipt-Signature; an unsigned one is 400 invalid_signature and nothing ' +
      'is charged or stored. Then someone holding the API key alone cannot issue receipts in the merchant’s ' +
      'name. Turning it off (requireSignatures: false) while this client has an active key needs a ' +
      'Key-Change-Proof (action signing-policy, target `requireSignatures=false`) by one of its keys, for the ' +
      'same reason. Every change is audited and announced to your webhooks (merchant.keys.changed). Operators ' +
      'set the same with `npm run admin -- merchants require-signatures`.',
    details:
      'A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant) `{ ' +
      'requireSignatures }` → `{ requireSignatures, updatedAt }`. With `true`, every ' +
      '`payments/{gateway}/create`, `receipts/encrypt` and refund request of the client must carry ' +
      '`Receipt-Signature`; an unsigned one is `400 invalid_signature` (`details.reason: "unsigned"`) ' +
      'and nothing is charged or stored. Requiring signatures without an active key is `409` (every ' +
      'request would be refused). Turning it off while the client has an active key needs the ' +
      '`Key-Change-Proof` header (action `signing-policy`, target `requireSignatures=false`), else `403 ' +
      'KEY_CHANGE_PROOF_REQUIRED`. Operators set the same with `npm run admin -- merchants ' +
      'require-signatures --client CLIENT_ID [--off]`.',
  },
  request: {
    headers: lazySchema(() => z.object({ 'Key-Change-Proof': keyChangeProofHeader.optional() })),
    body: { description: 'The policy.', schema: signingPolicyBody },
  },
  response: { description: 'The policy now in force.', schema: signingPolicySchema, enveloped: true },
  errors: {
    403: {
      description:
        'Turning signatures off without a valid Key-Change-Proof (details.reason): nothing changed.',
      codes: ['KEY_CHANGE_PROOF_REQUIRED'],
    },
    409: { description: 'Signatures cannot be required without an active signing key.', codes: ['CONFLICT'] },
  },
});
