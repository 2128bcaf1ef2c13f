import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { fetchedReceiptSchema } from '../../../lib/receipts/envelope-schema.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const getReceiptRoute = defineRoute({
  name: 'get-receipt',
  method: 'GET',
  path: '/api/v1/receipts/{receiptId}',
  entry: 'functions/receipts/get-receipt/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, receipts: 'read', transactions: 'read', users: 'read' },
  docs: {
    tag: 'receipts',
    summary: 'Fetch a stored envelope',
    description:
      'A merchant reads the receipt of this receiptId that it encrypted; an issuer reads the receipt of this ' +
      'receiptId wrapped for one of its users. A receiptId is unique per merchant only, so an issuer should name ' +
      'the `merchantId` it got with the receiptId (every inbox entry and webhook event carries both): then only ' +
      "that merchant's receipt is answered. Without it the receipt is answered only when one merchant's receipt " +
      "of this id is for the issuer's users; when several are, the answer is 400 naming merchantId, never one of " +
      'them in place of another (another merchant knowing the id could otherwise substitute its own envelope). ' +
      'Anyone else gets the same 404 as for an unknown receiptId. The envelope is returned as stored: nothing is ' +
      'decrypted.',
    details:
      'Merchant or issuer. `{ envelope, mapping, paymentStatus, relatedReceiptId }`: the stored ' +
      'envelope exactly as encrypt answered it, its transaction mapping (or `null`), and what is kept ' +
      'in clear beside the envelope: its `paymentStatus` (`null` for a receipt made by ' +
      '`receipts/encrypt`) and, for a refund receipt, the sale it refunds (else `null`). A merchant ' +
      'reads the receipt of that id it encrypted (its own namespace); an issuer reads the receipt of ' +
      'that id wrapped for one of its users, whichever merchant client made it. A `receiptId` is ' +
      'unique per merchant only, so an issuer should pass the `merchantId` it got with the id ' +
      "(`?merchantId=…`; every inbox entry and webhook event carries both): only that merchant's " +
      'receipt is answered, since a `merchantId` belongs to one merchant client. Without it, the ' +
      "receipt is answered when exactly one merchant's receipt of that id is for the issuer's users; " +
      'when several are, the answer is `400 INVALID_REQUEST` naming `merchantId`, never one of them in ' +
      'place of another (a second merchant that knew the id and the card could otherwise put its own ' +
      'envelope where the one the user was paid with should be). Anyone else, an escrowed receipt for ' +
      "an issuer included, gets the same `404` as for an unknown id. The issuer's lookup goes through " +
      'an index DynamoDB updates a moment after the write.',
  },
  request: {
    params: lazySchema(() => z.object({ receiptId: uuid })),
    query: lazySchema(() =>
      z.object({
        merchantId: uuid
          .optional()
          .meta({ description: "The receipt's merchantId, as the inbox entry or webhook event gave it." }),
      }),
    ),
  },
  response: { description: 'The envelope and its mapping.', schema: fetchedReceiptSchema, enveloped: true },
  errors: {
    400: {
      description:
        "receiptId or merchantId is not a UUID, or several merchants' receipts for the issuer's users have this " +
        'receiptId and no merchantId was named.',
    },
    404: { description: 'No such receipt, or not readable by this client.' },
  },
});
