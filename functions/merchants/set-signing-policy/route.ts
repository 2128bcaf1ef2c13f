import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { signingPolicyBody, signingPolicySchema } from '../../../lib/merchants/schemas.js';

export const setSigningPolicyRoute = defineRoute({
  name: 'set-signing-policy',
  method: 'POST',
  path: '/api/v1/merchants/signing-policy',
  entry: 'functions/merchants/set-signing-policy/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Require signed receipts, or stop requiring them',
    description:
      'With requireSignatures: true, every payments/{gateway}/create, receipts/encrypt and refund request of ' +
      'this merchant client must carry Receipt-Signature; an unsigned one is 400 invalid_signature and nothing ' +
      'is charged or stored. Then someone holding the API key alone cannot issue receipts in the merchant’s ' +
      'name. Operators set the same with `npm run admin -- merchants require-signatures`.',
    details:
      'A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant) `{ ' +
      'requireSignatures }` → `{ requireSignatures, updatedAt }`. With `true`, every ' +
      '`payments/{gateway}/create`, `receipts/encrypt` and refund request of the client must carry ' +
      '`Receipt-Signature`; an unsigned one is `400 invalid_signature` (`details.reason: "unsigned"`) ' +
      'and nothing is charged or stored. Requiring signatures without an active key is `409` (every ' +
      'request would be refused). Operators set the same with `npm run admin -- merchants ' +
      'require-signatures --client CLIENT_ID [--off]`.',
  },
  request: { body: { description: 'The policy.', schema: signingPolicyBody } },
  response: { description: 'The policy now in force.', schema: signingPolicySchema, enveloped: true },
  errors: {
    409: { description: 'Signatures cannot be required without an active signing key.', codes: ['CONFLICT'] },
  },
});
