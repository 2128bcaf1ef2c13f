import type * as z from 'zod';
import type { Caller } from '../api-keys/authenticator.js';
import { cardTagPrefix } from '../crypto/card-tag.js';
import { transferEnvelope, type Recipient } from '../crypto/envelope.js';
import { parsePublicKey } from '../crypto/keys.js';
import type { ReceiptEnvelope, ReceiptKey, StoredReceipt } from '../db/receipts.js';
import type { UserRecord } from '../db/users.js';
import type { AppDeps } from '../app/deps.js';
import { admitCardRequest } from './card-request.js';
import { findByEvidence } from './evidence.js';
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

const DAY_MS = 86_400_000;

/**
 * Releases the receipts escrowed for a user's card that a card transaction matches: same currency,
 * the receipt's total (or total before tip) equal to the amount, and its transaction time within the
 * configured window of the transaction's. Registering a card proves nothing about who issues it; the
 * card transaction is what only the issuer has. Each claimed transaction is the same look-ups in the keyed
 * evidence index (lib/receipts/evidence.ts), so a claim costs the same whatever the card has escrowed
 * near that time, and releases every receipt the evidence matches. Each released receipt is re-wrapped
 * for the user's current key: escrow unwrap, wrap, with the envelope's bound fields and protected
 * header unchanged (a legacy envelope claimed by a P-256 key is re-sealed, same bound fields, new
 * content key).
 */
export async function claimEscrowedReceipts(deps: ClaimDeps, input: ClaimInput): Promise<ClaimOutcome> {
  const { caller, requestId } = input;
  const user = await admitCardRequest(deps, input, 'escrow.claim-request');

  const recipient = { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) };
  const released = new Set<string>();
  const results: ClaimOutcome['results'] = [];
  for (const [transactionIndex, claimed] of input.transactions.entries()) {
    const receiptIds: string[] = [];
    for (const candidate of await findByEvidence(deps, user, claimed)) {
      const key = `${candidate.merchantClientId}#${candidate.receiptId}`;
      // Only what is still escrowed: the user's own receipts are found too, and left as they are.
      if (released.has(key) || !candidate.envelope.isEscrowed || candidate.recipientUserId) continue;
      if (await releaseReceipt(deps, candidate, user, recipient, requestId)) {
        released.add(key);
        receiptIds.push(candidate.receiptId);
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

/**
 * Re-wraps one escrowed receipt for the user, once; false when it could not be (it stays escrowed).
 * The one place a receipt leaves escrow: whatever else a release must carry along (a sale's refund
 * receipts, say) is called from here, after the conditional write has made this release the only one.
 */
export async function releaseReceipt(
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
    const ttl = Math.floor(expiresAt.getTime() / 1000);
    const claimed = await deps.repos.receipts.claim(receipt, envelope, user.userId, ttl);
    if (claimed) {
      await extendEvidence(deps, receipt, ttl, requestId);
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
      await releaseRelatedReceipts(deps, receipt, user, recipient, requestId);
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

/**
 * When a claim releases a sale receipt, the refund receipts escrowed with it (they carry no claim
 * facts of their own) go to the same user. The sale is read again after its release: a refund
 * stored while the claim ran is in it, and one stored after sees the sale released and is sealed for
 * the user instead (lib/payments/lifecycle.ts). Whatever finds the sale to release (the claim's
 * matching) need not know of refunds.
 */
export async function releaseRelatedReceipts(
  deps: ClaimDeps,
  sale: ReceiptKey,
  user: UserRecord,
  recipient: Recipient,
  requestId: string,
): Promise<string[]> {
  const stored = await deps.repos.receipts.get(sale);
  const released: string[] = [];
  for (const receiptId of stored?.refundReceiptIds ?? []) {
    const related = await deps.repos.receipts.get({ merchantClientId: sale.merchantClientId, receiptId });
    if (!related?.envelope.isEscrowed || related.recipientUserId) continue;
    try {
      const rewrapped = await transferEnvelope(
        related.envelope,
        (encryptedKey) => deps.escrow.unwrap(encryptedKey),
        recipient,
      );
      const expiresAt = new Date(Date.parse(related.createdAt) + deps.config.receiptRetentionDays * DAY_MS);
      const envelope: ReceiptEnvelope = {
        ...related.envelope,
        ...rewrapped,
        isEscrowed: false,
        escrowKeyId: null,
        expiresAt: expiresAt.toISOString(),
      };
      if (
        await deps.repos.receipts.releaseWithSale(
          related,
          envelope,
          user.userId,
          Math.floor(expiresAt.getTime() / 1000),
        )
      ) {
        released.push(receiptId);
        await deps.audit.record({
          action: 'escrow.claim',
          outcome: 'success',
          reason: 'released with its sale',
          requestId,
          clientId: user.clientId,
          userId: user.userId,
          receiptId,
          keyId: user.keyId,
          escrowKeyId: deps.escrow.keyId,
        });
      }
    } catch (error) {
      deps.logger.warn('refund receipt not released with its sale', {
        requestId,
        receiptId,
        error: error instanceof Error ? error.name : 'unknown',
      });
    }
  }
  return released;
}

/**
 * A released receipt lives as long as any of the user's, and so must the entries a match finds it by
 * (named on the receipt: StoredReceipt.evidenceIds). The release has happened whatever this finds: a
 * failure is logged, and the entries keep the escrow expiry until `evidence backfill` gives them the
 * receipt's (the receipt itself is unaffected).
 */
async function extendEvidence(
  deps: ClaimDeps,
  receipt: StoredReceipt,
  ttl: number,
  requestId: string,
): Promise<void> {
  try {
    // Read again, strongly consistent: ids a resealing added since the claim read the receipt count too.
    await deps.repos.evidence.setTtl(await deps.repos.receipts.evidenceKeysOfReceipt(receipt), ttl);
  } catch (error) {
    deps.logger.warn("a released receipt's evidence entries keep their escrow expiry", {
      requestId,
      receiptId: receipt.receiptId,
      error: error instanceof Error ? error.name : 'unknown',
    });
  }
}
