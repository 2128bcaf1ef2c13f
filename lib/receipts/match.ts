import type * as z from 'zod';
import type { Caller } from '../api-keys/authenticator.js';
import { cardTagPrefix } from '../crypto/card-tag.js';
import { admitCardRequest, type CardRequestDeps } from './card-request.js';
import { findByEvidence } from './evidence.js';
import type { matchedTransactionSchema, matchReceiptsBody } from './requests.js';

export type MatchDeps = CardRequestDeps;

export type MatchedTransaction = z.infer<typeof matchedTransactionSchema>;

export type MatchInput = z.infer<typeof matchReceiptsBody> & {
  userId: string;
  caller: Caller;
  requestId: string;
};

export interface MatchOutcome {
  /** One per transaction, in the request's order. */
  matches: { reference: string; receiptIds: string[] }[];
}

/**
 * Puts the user's receipts beside the lines of its card statement: for each of the issuer's card
 * transactions, the ids of the receipts wrapped for this user whose evidence matches it (same
 * currency, the total or total before tip equal to the amount, the time within ± the claim window,
 * the last four digits when both sides have them). The same keyed look-up as a claim
 * (lib/receipts/evidence.ts), one per transaction, so a match costs the same whatever the card holds
 * near that time; and the same per-card allowance, spent per transaction before anything is read.
 * Escrowed receipts are found by the look-up too and left out: only a claim makes them the user's.
 * A receipt of the card wrapped for another user (an earlier registration of the card) is not this
 * user's either. Nothing is decrypted, nothing is written but the allowance and the audit record.
 */
export async function matchReceipts(deps: MatchDeps, input: MatchInput): Promise<MatchOutcome> {
  const { caller, requestId } = input;
  const user = await admitCardRequest(deps, input, 'receipts.match');
  const matches: MatchOutcome['matches'] = [];
  for (const transaction of input.transactions) {
    const found = await findByEvidence(deps, user, transaction);
    matches.push({
      reference: transaction.reference,
      receiptIds: found
        .filter((receipt) => receipt.recipientUserId === user.userId && !receipt.envelope.isEscrowed)
        .map((receipt) => receipt.receiptId),
    });
  }
  await deps.audit.record({
    action: 'receipts.match',
    outcome: 'success',
    requestId,
    clientId: caller.clientId,
    userId: user.userId,
    cardTagPrefix: cardTagPrefix(user.cardTag),
    // Counts only: the references are the issuer's ledger ids, and the receipt ids are in the answer.
    counts: {
      transactions: matches.length,
      matched: matches.filter((match) => match.receiptIds.length > 0).length,
      receipts: matches.reduce((sum, match) => sum + match.receiptIds.length, 0),
    },
  });
  return { matches };
}
