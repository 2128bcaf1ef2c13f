import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { claimReceiptsBody } from '../../../lib/receipts/requests.js';

export const claimReceiptsResponse = lazySchema(() =>
  z
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
    }),
);

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
    details:
      'Issuer, for one of its users. `{ userId, transactions: [{ amount, currency, transactionDate, ' +
      "cardLast4? }] }` with 1 to 50 transactions, as the issuer's ledger has them for the user's card " +
      '(`amount` in minor units, `transactionDate` ISO 8601 with offset) → `{ userId, results: [{ ' +
      'transactionIndex, receiptIds }], released }`. Each transaction releases the receipts escrowed ' +
      "for the user's card whose currency is the same, whose total (or total before tip, when the " +
      'receipt has a tip) equals `amount` exactly, and whose transaction time is within ±15 minutes of ' +
      '`transactionDate` (`CLAIM_WINDOW_MINUTES`, up to ±24 hours); when both the claim and the ' +
      "receipt give `cardLast4`, they must match too. A released receipt is re-wrapped for the user's " +
      'current key (escrow unwrap, then wrap; the ciphertext, bound fields and protected header stay), ' +
      'is no longer escrowed, is kept 7 years and decrypts like any other. Most transactions release ' +
      'nothing (a purchase with no digital receipt); that is not an error.\n\n' +
      'Each transaction is one look-up in the keyed evidence index (see Escrow (docs/API.md)): every ' +
      'escrowed receipt it matches is released, however many others the card has near that time, and a ' +
      'claim makes the same reads, in about the same time, whether the card has no receipt near it or ' +
      'hundreds (`npm run bench -- --only claims` measures it). Nothing in the answer, its status or ' +
      'its timing tells a client without the evidence whether the card has receipts near a time.\n\n' +
      "Limits: each transaction counts against the card's daily allowance with this client, 200 per " +
      "UTC day (`CLAIM_DAILY_LIMIT`), which match spends too: the card's, not the user's, so erasing " +
      "the user and registering the card again gives no new allowance (another client's registration " +
      'of the card has its own). It is taken atomically for the whole request, so concurrent claims ' +
      'never exceed it: past it the call is `429 CLAIM_LIMIT_EXCEEDED` with `Retry-After` (seconds to ' +
      'the next UTC day) and releases nothing. A `transactionDate` no stored receipt can have (more ' +
      'than a day ahead, or older than the longest a receipt is kept: 7 years by default) is `400` ' +
      'naming `transactions.<i>.transactionDate`, before any allowance is spent. The call also spends ' +
      "the caller's `general` rate budget. A `userId` that is not this client's user is `404 " +
      'not_found`, exactly as one that does not exist. Every claim, released receipt and refusal is ' +
      'audited.',
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
