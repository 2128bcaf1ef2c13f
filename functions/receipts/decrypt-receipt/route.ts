import { defineRoute } from '../../../lib/kernel/route.js';
import { digitalReceiptSchema as digitalReceiptResponse } from '../../../lib/receipts/schemas.js';

import { noStore, platformTables } from '../../../lib/kernel/route-tables.js';
import { decryptReceiptBody } from '../../../lib/receipts/requests.js';

export const decryptReceiptRoute = defineRoute({
  name: 'decrypt-receipt',
  method: 'POST',
  path: '/api/v1/receipts/decrypt',
  entry: 'functions/receipts/decrypt-receipt/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, users: 'read', keyPairs: 'read', accessTokens: 'read' },
  docs: {
    tag: 'receipts',
    summary: 'Decrypt an envelope',
    description:
      'Needs a live token from grant-access for the user the envelope is wrapped for, issued to this client, ' +
      `and that user's private key, which is held in memory for this request only. ${noStore}`,
    details:
      'Issuer. `{ envelope, accessTokenId, privateKey }` → the plaintext `DigitalReceipt`. Needs a ' +
      "live token issued to this client for the user the envelope is wrapped for, and that user's " +
      'private key. Every failure is the same `403 DECRYPTION_ERROR` (see Uniform decryption failure ' +
      '(docs/API.md)); a malformed body is `400`.',
  },
  request: {
    body: { description: 'The envelope, the token id and the private key.', schema: decryptReceiptBody },
  },
  response: { description: 'The plaintext receipt.', schema: digitalReceiptResponse, enveloped: true },
  errors: {
    403: {
      description:
        'Every decryption failure: unknown, expired or foreign token, wrong private key, tampered or escrowed ' +
        'envelope. The body is identical in every case apart from request_id and timestamp.',
      codes: ['DECRYPTION_ERROR'],
    },
  },
});
