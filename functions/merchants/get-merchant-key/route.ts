import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { kidSchema, signingKeySchema } from '../../../lib/merchants/schemas.js';

export const getMerchantKeyRoute = defineRoute({
  name: 'get-merchant-key',
  method: 'GET',
  path: '/api/v1/merchant-keys/{kid}',
  entry: 'functions/merchants/get-merchant-key/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer', 'merchant'],
  tables: { ...platformTables, merchantKeys: 'read' },
  docs: {
    tag: 'merchants',
    summary: 'Read a merchant signing key',
    description:
      "The public key a signed receipt's merchantSignature.kid names, for a device to check the signature " +
      '(the SDK: verifyReceiptSignature). The kid is the key’s RFC 7638 thumbprint, so a device can check that ' +
      'the key it is given is the one the receipt names. Revoked keys stay readable, with when they were revoked: ' +
      'a signature made before then still stands.',
    details:
      "(issuer or merchant, any client) → the key: how a device gets the public key a receipt's " +
      '`merchantSignature.kid` names. Revoked keys stay readable with `revokedAt`: a receipt signed ' +
      'before then still verifies. Unknown kid: `404`.',
  },
  request: { params: z.object({ kid: kidSchema }) },
  response: { description: 'The key.', schema: signingKeySchema, enveloped: true },
  errors: {
    400: { description: 'kid is not a kid.' },
    404: { description: 'No signing key has this kid.' },
  },
});
