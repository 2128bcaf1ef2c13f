import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { claimReceiptsBody } from '../../../lib/receipts/requests.js';

export const claimReceiptsResponse = z
  .strictObject({
    userId: uuid,
    results: z.array(
      z.strictObject({
        transactionIndex: z.number().int().min(0),
        receiptIds: z.array(z.string()),
      }),
    ),
    released: z.number().int().min(0),
  })
  .meta({
    id: 'ClaimReceiptsResult',
    description:
      'For each transaction, by its index in the request, the receipts it released (often none). `released` is ' +
      'their total.',
  });

export const claimReceiptsRoute = defineRoute({
  name: 'claim-receipts',
  method: 'POST',
  path: '/api/v1/receipts/claim',
  entry: 'functions/receipts/claim-receipts/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, users: 'read', receipts: 'readWrite', evidence: 'readWrite' },
  escrow: 'wrapAndUnwrap',
  cardTags: true,
  timeoutSeconds: 29,
  docs: {
    tag: 'receipts',
    summary: "Release escrowed receipts with the card's transactions",
    description:
      'Registering a card releases nothing: the service cannot tell whether the client registering it issues it. A ' +
      "receipt escrowed for a user's card is released when its issuer shows the card transaction: same currency, " +
      'the receipt total (or its total before tip) equal to `amount`, and its transaction time within ±15 minutes ' +
      '(CLAIM_WINDOW_MINUTES, up to ±24 h) of `transactionDate`; `cardLast4`, when both sides have it, must match ' +
      "too. Released receipts are re-wrapped for the user's current key and decrypt like any other. Each " +
      'transaction is one look-up in a keyed evidence index: every matching receipt is released, however many ' +
      'others the card has near that time, and a claim costs the same whether the card has none or hundreds. Up ' +
      'to 50 transactions a call, each dated no later than a day from now and no earlier than the longest a ' +
      "receipt is kept (400 otherwise); each counts against the card's daily allowance with this client (200, " +
      'CLAIM_DAILY_LIMIT), which erasing the user and registering the card again does not renew, and the call ' +
      'against the general rate budget. Audited.',
  },
  request: {
    body: { description: 'The user and the card transactions to match.', schema: claimReceiptsBody },
  },
  response: {
    description: 'The receipts released, per transaction.',
    schema: claimReceiptsResponse,
    enveloped: true,
  },
  errors: {
    400: { description: 'Invalid body, or a transactionDate no stored receipt can have.' },
    404: { description: "No such user for this client: another client's user is answered the same way." },
    429: {
      description:
        "Rate limit exceeded, or (CLAIM_LIMIT_EXCEEDED) the card's daily claim allowance with this client is spent.",
      codes: ['CLAIM_LIMIT_EXCEEDED'],
    },
  },
});
