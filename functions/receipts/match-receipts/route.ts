import * as z from 'zod';
import { defineRoute, type SameType } from '../../../lib/kernel/route.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { MatchOutcome } from '../../../lib/receipts/match.js';
import { ledgerReference, matchReceiptsBody } from '../../../lib/receipts/requests.js';

export const matchReceiptsResponse = z
  .strictObject({
    matches: z.array(
      z.strictObject({
        reference: ledgerReference,
        receiptIds: z.array(uuid).meta({
          description:
            "The user's receipts this transaction matches (often none, now and then more than one), in no " +
            'particular order. Fetch each with GET /receipts/{receiptId}.',
        }),
      }),
    ),
  })
  .meta({
    id: 'MatchReceiptsResult',
    description: 'One entry per transaction of the request, in its order, each with its `reference`.',
  });

export const responseTypeMatches: SameType<z.output<typeof matchReceiptsResponse>, MatchOutcome> = true;

export const matchReceiptsRoute = defineRoute({
  name: 'match-receipts',
  method: 'POST',
  path: '/api/v1/users/{userId}/receipts/match',
  entry: 'functions/receipts/match-receipts/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, users: 'read', receipts: 'read', evidence: 'read' },
  cardTags: true,
  timeoutSeconds: 29,
  docs: {
    tag: 'receipts',
    summary: "Match a user's receipts to card transactions",
    description:
      "Puts receipts beside the lines of a card statement without decrypting anything. For each of the user's " +
      "card transactions as the issuer's ledger has them, the ids of the user's receipts that match it: same " +
      'currency, the receipt total (or its total before tip) equal to `amount`, its transaction time within ' +
      '±15 minutes (CLAIM_WINDOW_MINUTES) of `transactionDate`, and `cardLast4`, when both sides have it, equal. ' +
      'Each transaction is one look-up in the keyed evidence index that claims use, so a match costs the same ' +
      'whatever the card has near that time. Escrowed receipts are not listed: a claim makes them the ' +
      "user's first. Receipts wrapped for the user before the evidence index existed have no entries in it and " +
      'are not found (the inbox lists them). Refund receipts are not matched: find them through their sale ' +
      "(`relatedReceiptId` in the inbox). Up to 100 transactions a call, each with a `reference` of the issuer's " +
      'own (echoed back, never stored) used once per call, each dated no later than a day from now and no ' +
      "earlier than the longest a receipt is kept (400 otherwise). Each transaction spends one of the card's " +
      'daily allowance with this client that claims spend too (200, CLAIM_DAILY_LIMIT): a spent allowance is ' +
      "429 for both. Another issuer's user is the same 404 as an unknown one. Audited (ids and counts only).",
  },
  request: {
    params: z.object({ userId: uuid }),
    body: { description: "The user's card transactions to match.", schema: matchReceiptsBody },
  },
  response: {
    description: 'The matching receipts, per transaction.',
    schema: matchReceiptsResponse,
    enveloped: true,
  },
  errors: {
    400: {
      description:
        'Invalid userId or body (a repeated reference among them), or a transactionDate no stored receipt can have.',
    },
    404: { description: "No such user for this client: another client's user is answered the same way." },
    429: {
      description:
        "Rate limit exceeded, or (CLAIM_LIMIT_EXCEEDED) the card's daily allowance with this client, shared with " +
        'claims, is spent.',
      codes: ['CLAIM_LIMIT_EXCEEDED'],
    },
  },
});
