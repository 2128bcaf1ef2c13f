import { defineRoute } from '../../../lib/kernel/route.js';
import { digitalReceiptSchema as digitalReceiptResponse } from '../../../lib/receipts/schemas.js';

import { noStore, platformTables } from '../../../lib/kernel/route-tables.js';
import { decryptPaymentBody } from '../../../lib/payments/schemas.js';

export const decryptPaymentRoute = defineRoute({
  name: 'decrypt-payment',
  method: 'POST',
  path: '/api/v1/payments/decrypt',
  entry: 'functions/payments/decrypt-payment/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: {
    ...platformTables,
    users: 'read',
    keyPairs: 'read',
    accessTokens: 'read',
    receipts: 'read',
    transactions: 'read',
    merchants: 'read',
  },
  gateways: true,
  rateGroup: 'payments',
  timeoutSeconds: 29,
  docs: {
    tag: 'payments',
    summary: 'Decrypt the receipt of a payment',
    description:
      'Step 5. Reads the payment from the gateway, follows its receipt pointers to the stored envelope, checks ' +
      `them against the stored mapping, then decrypts exactly like receipts/decrypt. ${noStore}`,
    details:
      'Issuer. `{ paymentId, gateway, accessTokenId, privateKey }` → the plaintext `DigitalReceipt`. ' +
      'The service reads the payment from the gateway, follows its metadata to the stored envelope, ' +
      'checks the pointers against the stored transaction mapping (so a payment whose metadata was ' +
      "edited to point at someone else's receipt finds nothing), then decrypts exactly as " +
      '`receipts/decrypt`. An unknown payment id, or a payment that carries no receipt of this ' +
      'service, is `404 not_found`; everything about the token, key and envelope is the uniform `403 ' +
      'DECRYPTION_ERROR`; an unreachable gateway is `502`.',
  },
  request: {
    body: { description: 'The payment, the token id and the private key.', schema: decryptPaymentBody },
  },
  response: { description: 'The plaintext receipt.', schema: digitalReceiptResponse, enveloped: true },
  errors: {
    400: { description: 'Invalid body, or a gateway not configured here.' },
    403: {
      description:
        'Every decryption failure, identical as for receipts/decrypt: token, private key or envelope not valid.',
      codes: ['DECRYPTION_ERROR'],
    },
    404: {
      description: 'The gateway has no such payment, or the payment carries no receipt of this service.',
    },
    502: { description: 'The gateway could not be reached.', codes: ['GATEWAY_ERROR'] },
  },
});
