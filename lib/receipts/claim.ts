import type * as z from 'zod';
import type { Caller } from '../api-keys/authenticator.js';
import { cardTagPrefix, type CardTag, type CardTagKeyring, type ClaimFacts } from '../crypto/card-tag.js';
import { transferEnvelope, type Recipient } from '../crypto/envelope.js';
import { parsePublicKey } from '../crypto/keys.js';
import type { ReceiptEnvelope, StoredReceipt } from '../db/receipts.js';
import type { UserRecord } from '../db/users.js';
import type { AppDeps } from '../app/deps.js';
import { ClaimLimitError, NotFoundError } from '../kernel/errors.js';
import type { claimedTransactionSchema, claimReceiptsBody } from './requests.js';

export type ClaimDeps = Pick<
  AppDeps,
  'clock' | 'config' | 'repos' | 'audit' | 'escrow' | 'logger' | 'telemetry' | 'cardTags'
>;

export type ClaimedTransaction = z.infer<typeof claimedTransactionSchema>;

export type ClaimInput = z.infer<typeof claimReceiptsBody> & { caller: Caller; requestId: string };

export interface ClaimOutcome {
  userId: string;
  results: { transactionIndex: number; receiptIds: string[] }[];
  released: number;
}

/**
 * Escrowed receipts read per claimed transaction and card-tag version: with 50 transactions a call
 * reads at most a few hundred items and unwraps no more, however many receipts the card has pending.
 */
export const CANDIDATES_PER_TRANSACTION = 10;

const DAY_MS = 86_400_000;

const matches = (facts: ClaimFacts | undefined, claimed: ClaimedTransaction, windowMs: number): boolean =>
  facts !== undefined &&
  facts.currency === claimed.currency &&
  facts.amounts.includes(claimed.amount) &&
  Math.abs(Date.parse(facts.at) - Date.parse(claimed.transactionDate)) <= windowMs &&
  // Last four digits narrow the match only when both sides have them.
  (claimed.cardLast4 === undefined || facts.cardLast4 === undefined || facts.cardLast4 === claimed.cardLast4);

/** The tags the user's card may be stored under: its own, and the current version's if it lags. */
function tagsOfUser(user: UserRecord, keyring: CardTagKeyring): CardTag[] {
  const current = keyring.advance(user.cardTag);
  return current === user.cardTag ? [current] : [current, user.cardTag];
}

/**
 * Releases the receipts escrowed for a user's card that a card transaction matches: same currency,
 * the receipt's total (or total before tip) equal to the amount, and its transaction time within the
 * configured window of the transaction's. Registering a card proves nothing about who issues it; the
 * card transaction is what only the issuer has. Each released receipt is re-wrapped for the user's
 * current key: escrow unwrap, wrap, with the envelope's bound fields and protected header unchanged
 * (a legacy envelope claimed by a P-256 key is re-sealed, same bound fields, new content key).
 */
export async function claimEscrowedReceipts(deps: ClaimDeps, input: ClaimInput): Promise<ClaimOutcome> {
  const { caller, requestId } = input;
  const user = await deps.repos.users.getById(input.userId);
  if (!user || user.clientId !== caller.clientId) {
    await deps.audit.record({
      action: 'escrow.claim-request',
      outcome: 'failure',
      reason: !user ? 'unknown user' : 'user of another client',
      requestId,
      clientId: caller.clientId,
      userId: input.userId,
    });
    // Another client's user is answered exactly like one that does not exist.
    throw new NotFoundError('No user with this userId is registered by this client');
  }

  const now = deps.clock.now();
  const keyring = await deps.cardTags.keyring();
  // Per card and client, not per user (DECISIONS, round 3): erasing the user and registering the card
  // again must not give anyone a fresh allowance.
  const quota = await deps.repos.claimQuota.spend(
    `${keyring.allowanceSubject(user.cardTag)}#${caller.clientId}`,
    input.transactions.length,
    deps.config.claimDailyLimit,
    now,
  );
  if (!quota.spent) {
    deps.telemetry.count('ClaimLimitRefusals');
    await deps.audit.record({
      action: 'escrow.claim-request',
      outcome: 'failure',
      reason: 'daily claim limit reached',
      requestId,
      clientId: caller.clientId,
      userId: user.userId,
      counts: { transactions: input.transactions.length },
    });
    throw new ClaimLimitError(quota.retryAfterSeconds, deps.config.claimDailyLimit);
  }

  const windowMs = deps.config.claimWindowMinutes * 60_000;
  const recipient = { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) };
  const released = new Set<string>();
  const results: ClaimOutcome['results'] = [];
  for (const [transactionIndex, claimed] of input.transactions.entries()) {
    const at = Date.parse(claimed.transactionDate);
    const from = new Date(at - windowMs).toISOString();
    const to = new Date(at + windowMs).toISOString();
    const receiptIds: string[] = [];
    for (const tag of tagsOfUser(user, keyring)) {
      const candidates = await deps.repos.receipts.pendingForCardBetween(
        tag,
        from,
        to,
        CANDIDATES_PER_TRANSACTION,
      );
      for (const candidate of candidates) {
        const key = `${candidate.merchantClientId}#${candidate.receiptId}`;
        if (released.has(key) || !candidate.claimFacts) continue;
        if (!matches(keyring.openFacts(tag, candidate.claimFacts), claimed, windowMs)) continue;
        if (await release(deps, candidate, user, recipient, requestId)) {
          released.add(key);
          receiptIds.push(candidate.receiptId);
        }
      }
    }
    results.push({ transactionIndex, receiptIds });
  }
  await deps.audit.record({
    action: 'escrow.claim-request',
    outcome: 'success',
    requestId,
    clientId: caller.clientId,
    userId: user.userId,
    cardTagPrefix: cardTagPrefix(user.cardTag),
    counts: { transactions: input.transactions.length, released: released.size },
  });
  return { userId: user.userId, results, released: released.size };
}

/** Re-wraps one escrowed receipt for the user, once; false when it could not be (it stays escrowed). */
async function release(
  deps: ClaimDeps,
  receipt: StoredReceipt,
  user: UserRecord,
  recipient: Recipient,
  requestId: string,
): Promise<boolean> {
  try {
    // Re-wrapped for the user's key, or re-sealed when a legacy envelope meets a P-256 key (docs/ENVELOPE.md).
    const rewrapped = await transferEnvelope(
      receipt.envelope,
      (encryptedKey) => deps.escrow.unwrap(encryptedKey),
      recipient,
    );
    const expiresAt = new Date(
      Date.parse(receipt.envelope.createdAt) + deps.config.receiptRetentionDays * DAY_MS,
    );
    const envelope: ReceiptEnvelope = {
      ...receipt.envelope,
      ...rewrapped,
      isEscrowed: false,
      escrowKeyId: null,
      expiresAt: expiresAt.toISOString(),
    };
    const claimed = await deps.repos.receipts.claim(
      receipt,
      envelope,
      user.userId,
      Math.floor(expiresAt.getTime() / 1000),
    );
    if (claimed) {
      deps.telemetry.count('ReceiptsClaimed');
      await deps.audit.record({
        action: 'escrow.claim',
        outcome: 'success',
        requestId,
        clientId: user.clientId,
        userId: user.userId,
        receiptId: receipt.receiptId,
        keyId: user.keyId,
        escrowKeyId: deps.escrow.keyId,
      });
    }
    return claimed;
  } catch (error) {
    // One unreadable escrowed receipt must not fail the claim; it stays escrowed, and audited.
    deps.logger.warn('escrow claim failed', {
      requestId,
      receiptId: receipt.receiptId,
      error: error instanceof Error ? error.name : 'unknown',
    });
    await deps.audit.record({
      action: 'escrow.claim',
      outcome: 'failure',
      reason: error instanceof Error ? error.name : 'unknown',
      requestId,
      clientId: user.clientId,
      userId: user.userId,
      receiptId: receipt.receiptId,
    });
    return false;
  }
}
