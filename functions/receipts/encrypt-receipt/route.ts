import * as z from 'zod';
import {
  RECEIPT_CREDENTIAL_DETAILS,
  RECEIPT_CREDENTIAL_ERROR,
} from '../../../lib/receipts/credential-field.js';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import {
  encryptedEnvelopeResponse,
  flattenedEnvelopeResponse,
} from '../../../lib/receipts/envelope-schema.js';

import { platformTables } from '../../../lib/kernel/route-tables.js';
import { nestedEncryptBody, flattenedEncryptBody, encryptBody } from '../../../lib/receipts/requests.js';
import { receiptSignatureHeader } from '../../../lib/merchants/schemas.js';

export const encryptReceiptRoute = defineRoute({
  name: 'encrypt-receipt',
  method: 'POST',
  path: '/api/v1/receipts/encrypt',
  entry: 'functions/receipts/encrypt-receipt/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: {
    ...platformTables,
    users: 'read',
    keyPairs: 'read',
    receipts: 'write',
    merchants: 'readWrite',
    evidence: 'write',
    merchantKeys: 'read',
  },
  escrow: 'wrap',
  cardTags: true,
  docs: {
    tag: 'receipts',
    summary: 'Encrypt a receipt for its recipient',
    description:
      'AES-256-GCM for the receipt, RSA-OAEP-256 for the content key. A body with a `receipt` member is the ' +
      'nested form, any other the flattened form. The recipient is the user registered with ' +
      '`recipientHashedPan`; when there is none the receipt is encrypted with the escrow key (`isEscrowed: ' +
      'true`) and released only when the issuer of a registered user shows the card transaction ' +
      '(`POST /api/v1/receipts/claim`). The envelope is stored under its receiptId: an ' +
      'identical retry returns the first envelope. Unknown fields are refused, so a misspelt ' +
      '`recipientHashedPan` cannot escrow a receipt silently. With `Receipt-Signature` the merchant signs the ' +
      'receipt (docs/ENVELOPE.md): the nested form signs its `receipt` as sent; the flattened form signs the ' +
      'receipt it maps to, timed by its transactionDate (which it must give). The signature is sealed inside ' +
      'the receipt as merchantSignature.',
    details:
      'Merchant. Two forms, told apart by the body: one with a `receipt` member is the nested form, ' +
      'any other the flattened form.\n\n' +
      '- Flattened: the receipt fields (docs/API.md) at the top level, `recipientHashedPan` among ' +
      'them. Response: the envelope without `expiresAt` and `escrowKeyId` (as the specification shows ' +
      'it).\n- Nested: `{ receipt: DigitalReceipt, recipientIdentifier: { type, value }, ' +
      'recipientHashedPan? }` (`type`: `email`, `phone`, `national_id` or `bank_account`). Response: ' +
      'the full envelope, `expiresAt` and `escrowKeyId` included. `recipientIdentifier` alone never ' +
      'finds a user (the service registers users by card only), so such a receipt is escrowed; the ' +
      'identifier is not stored in any form.\n\n' +
      'Both forms take DigitalReceipt 1.2 (docs/FORMATS.md, "DigitalReceipt 1.2 in requests"): a ' +
      '`taxBreakdown` that disagrees with the lines is `400` naming the field and the amount it must be ' +
      '(`receipt.summary.taxBreakdown.1.taxAmount`, `taxBreakdown.1.taxAmount` in the flattened form).\n\n' +
      'The envelope is stored under its `receiptId` and returned (format: ENVELOPE.md ' +
      '(docs/ENVELOPE.md)). Sending the same request again returns the first envelope; a different ' +
      'receipt under a `receiptId` this merchant client already used is `409 CONFLICT`. A `merchantId` ' +
      'another merchant client uses is `403 forbidden` (see Merchant namespaces (docs/API.md)). A ' +
      'failure to encrypt is `500 ENCRYPTION_ERROR`.\n\n' +
      RECEIPT_CREDENTIAL_DETAILS,
  },
  request: {
    headers: lazySchema(() => z.object({ 'Receipt-Signature': receiptSignatureHeader.optional() })),
    body: {
      description: 'The nested form or the flattened form.',
      schema: encryptBody,
      documented: lazySchema(() => z.union([nestedEncryptBody, flattenedEncryptBody])),
    },
  },
  response: {
    description:
      'The envelope. The nested form answers EncryptedReceiptEnvelope; the flattened form answers it without ' +
      'expiresAt and escrowKeyId, as the spec shows.',
    schema: lazySchema(() => z.union([encryptedEnvelopeResponse, flattenedEnvelopeResponse])),
    enveloped: true,
  },
  errors: {
    400: {
      description:
        'Invalid body. invalid_signature: the Receipt-Signature does not stand (its form, alg, kid, a revoked ' +
        'key, or a signature over anything but the receipt the request makes, each named in the message and ' +
        '`details.reason`), or this merchant client requires signatures and the request has none; nothing is ' +
        'stored.' +
        RECEIPT_CREDENTIAL_ERROR,
      codes: ['invalid_signature'],
    },
    403: {
      description:
        "The API key's roles do not include this operation, or the merchantId belongs to another merchant client.",
    },
    409: {
      description: 'A different receipt with this receiptId already exists for this merchant client.',
      codes: ['CONFLICT'],
    },
    500: { description: 'Encryption failed.', codes: ['ENCRYPTION_ERROR'] },
  },
});
