import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute, type SameType } from '../../../lib/kernel/route.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { MatchOutcome } from '../../../lib/receipts/match.js';
import { ledgerReference, matchReceiptsBody } from '../../../lib/receipts/requests.js';

export const matchReceiptsResponse = lazySchema(() =>
  z
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
    }),
);

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
    details:
      'Issuer, for one of its users: receipts beside the lines of the card statement, without ' +
      'decrypting anything. `{ transactions: [{ reference, amount, currency, transactionDate, ' +
      "cardLast4? }] }` with 1 to 100 transactions as the issuer's ledger has them for the user's card " +
      "→ `{ matches: [{ reference, receiptIds }] }`, one entry per transaction, in the request's " +
      "order. `reference` is the ledger's own id of the line: 1 to 128 printable ASCII characters " +
      '(space to `~`), each used once per call (a repeat is `400` naming `transactions.<i>.reference`, ' +
      'since the answer is keyed by it); it is echoed back and neither stored nor logged. `receiptIds` ' +
      "are the user's receipts the transaction matches by the claim's rule: same currency, the total " +
      '(or total before tip, when the receipt has a tip) equal to `amount`, the transaction time ' +
      'within ±15 minutes of `transactionDate` (`CLAIM_WINDOW_MINUTES`), and `cardLast4` equal when ' +
      'both sides have it. Usually none or one; more when the card paid several receipts of that ' +
      'amount within the window. The device then fetches each envelope with `GET ' +
      '/receipts/{receiptId}` and opens it.\n\n' +
      "What a match does not list:\n- escrowed receipts of the card: they are not the user's until a " +
      'claim releases them, after which a match finds them;\n- receipts of the card wrapped for another ' +
      "user (an earlier registration of the card, undone by the operator): they are that user's;\n- " +
      'receipts wrapped for the user before the evidence index existed: they have no entries in it, ' +
      'and none can be made for them, since nothing stored beside such a receipt names its amount, ' +
      'time or card (the inbox lists them);\n- refund receipts: they carry no claim facts of their own; ' +
      "the sale's receipt matches the purchase line, and the inbox (`relatedReceiptId`) and " +
      '`receipt.updated` events lead from it to its refunds.\n\n' +
      "Each transaction is one look-up in the keyed evidence index, the claim's (see Escrow " +
      '(docs/API.md)): a match makes the same reads whether the card has no receipt near that time or ' +
      'hundreds (`npm run bench -- --only claims` measures both). Each transaction spends one of the ' +
      "card's daily allowance with this client, the one claims spend (200 per UTC day, " +
      '`CLAIM_DAILY_LIMIT`), taken atomically for the whole request before anything is read: past it ' +
      'the call is `429 CLAIM_LIMIT_EXCEEDED` with `Retry-After`, for matches and claims alike, and ' +
      "answers nothing. A statement of 100 lines is half a day's allowance: match lines as they post " +
      'rather than the whole statement again. A `transactionDate` no stored receipt can have is `400` ' +
      'naming `transactions.<i>.transactionDate`, before any allowance is spent. The call spends the ' +
      "caller's `general` rate budget. A `userId` that is not this client's user is `404 not_found`, " +
      'exactly as one that does not exist. Every match and refusal is audited (`receipts.match`: the ' +
      'user, a card-tag prefix and counts of transactions, matched transactions and receipts; never a ' +
      'reference, amount or time).',
  },
  request: {
    params: lazySchema(() => z.object({ userId: uuid })),
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
