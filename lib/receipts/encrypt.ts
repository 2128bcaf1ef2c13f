import { createHash } from 'node:crypto';
import type { Caller } from '../api-keys/authenticator.js';
import { parsePublicKey } from '../crypto/keys.js';
import type { Recipient, SealedEnvelope } from '../crypto/envelope.js';
import { cardTagPrefix, type CardTag, type CardTagKeyring, type ClaimFacts } from '../crypto/card-tag.js';
import type { ReceiptEnvelope, StoredReceipt } from '../db/receipts.js';
import type { UserRecord } from '../db/users.js';
import type { AppDeps } from '../app/deps.js';
import { ConflictError, ForbiddenError } from '../kernel/errors.js';
import type { PaymentStatus } from '../kernel/payment-status.js';
import { evidenceEntriesFor, evidenceWidthMs } from './evidence.js';
import type { DigitalReceipt } from './schemas.js';
import { sealReceipt, sealReceiptEnvelope } from './seal.js';

export type EncryptDeps = Pick<
  AppDeps,
  'config' | 'clock' | 'repos' | 'audit' | 'escrow' | 'logger' | 'telemetry' | 'cardTags'
>;

export interface EncryptInput {
  receipt: DigitalReceipt;
  /**
   * The card whose registered user to encrypt for, found by its card tag; used for nothing else and
   * never stored. Absent, or no user for the card: the receipt is escrowed.
   */
  recipientHashedPan?: string;
  caller: Caller;
  requestId: string;
  /**
   * digestOf the validated request without its card (no recipientHashedPan, no recipientIdentifier):
   * an identical retry returns the first envelope. What is stored binds it to the card's tag
   * (boundDigest), so a table copy holds no hash a card number can be tried against.
   */
  requestDigest: string;
  /** Stored in clear beside the envelope: a payment's receipt starts `pending` (lib/payments/lifecycle.ts). */
  paymentStatus?: PaymentStatus;
}

export interface EncryptOutcome {
  envelope: ReceiptEnvelope;
  recipientUserId: string | null;
  /** The stored receipt's payment status as this request left or found it (absent: not a payment's). */
  paymentStatus?: StoredReceipt['paymentStatus'];
}

const DAY_MS = 86_400_000;

/** sha256 of a canonical rendering of the request, for idempotent retries; never stored with content. */
export const digestOf = (value: unknown): string =>
  createHash('sha256').update(JSON.stringify(value)).digest('hex');

/**
 * The stored digest: the request's (made without the card) bound to the card's tag. An unkeyed hash
 * over a body holding recipientHashedPan gave the card number back by brute force from a table copy
 * (issue 20); the tag needs the card-tag key.
 */
export const boundDigest = (requestDigest: string, cardTag: CardTag | null): string =>
  createHash('sha256')
    .update(`${requestDigest}\n${cardTag ?? ''}`)
    .digest('hex');

/** What a claim is matched on: the total, and the total before tip when there is a tip. */
export function claimFactsOf(receipt: DigitalReceipt): ClaimFacts {
  const { total, tipAmount, currency } = receipt.summary;
  const last4 = receipt.transaction.cardDetails?.last4 ?? receipt.cardTransaction?.last4;
  // Only the references the service sealed from the provider, never the merchant's own authorizationCode.
  const { authorizationCode, networkTransactionId } = receipt.cardTransaction ?? {};
  return {
    amounts: tipAmount ? [total, total - tipAmount] : [total],
    currency,
    at: new Date(receipt.transaction.datetime).toISOString(),
    ...(last4 ? { cardLast4: last4 } : {}),
    ...(authorizationCode ? { authorizationCode } : {}),
    ...(networkTransactionId ? { networkTransactionId } : {}),
  };
}

/** The card's registered user, and its current tag and the keyring, when the request names a card. */
async function cardOf(
  deps: EncryptDeps,
  hashedPan: string | undefined,
): Promise<{ user: UserRecord | null; cardTag: CardTag | null; keyring: CardTagKeyring | null }> {
  if (!hashedPan) return { user: null, cardTag: null, keyring: null };
  const keyring = await deps.cardTags.keyring();
  const tags = keyring.tagsOf(hashedPan);
  const user = await deps.repos.users.getByCardTags(tags);
  return { user, cardTag: tags[0]!, keyring };
}

/**
 * Seals for the card's registered user. One recipient's key can never fail a merchant's request
 * (DECISIONS, "Keys that cannot hurt others"): a stored key that no longer parses or cannot be sealed
 * to (one stored before import proved keys, or forced into the table) gives undefined, and the receipt
 * is escrowed instead, audited, counted and alarmed; the user's issuer rotates the key and claims it.
 */
async function sealForUser(
  deps: EncryptDeps,
  user: UserRecord,
  seal: (recipient: Recipient) => SealedEnvelope,
  input: Pick<EncryptInput, 'requestId' | 'caller' | 'receipt'>,
): Promise<SealedEnvelope | undefined> {
  try {
    return seal({ keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) });
  } catch (error) {
    const reason = error instanceof Error ? error.name : 'unknown';
    deps.logger.warn("sealing for the card's registered user failed: escrowed instead", {
      requestId: input.requestId,
      userId: user.userId,
      keyId: user.keyId,
      error: reason,
    });
    deps.telemetry.count('RecipientSealFailures');
    await deps.audit.record({
      action: 'receipt.encrypt',
      outcome: 'failure',
      reason: `the recipient's key could not be sealed to (${reason}): escrowed instead`,
      requestId: input.requestId,
      clientId: input.caller.clientId,
      receiptId: input.receipt.receiptId,
      userId: user.userId,
      keyId: user.keyId,
    });
    return undefined;
  }
}

/**
 * A merchantId belongs to the first merchant client that names it: another client's receipts could
 * otherwise pass for that merchant's. Refused before anything is sealed, stored or charged.
 */
export async function claimMerchant(
  deps: Pick<EncryptDeps, 'repos' | 'clock'>,
  merchantId: string,
  caller: Caller,
): Promise<void> {
  const owner = await deps.repos.merchants.claim(merchantId, caller.clientId, deps.clock.now());
  if (owner !== caller.clientId)
    throw new ForbiddenError('This merchantId belongs to another merchant client');
}

/**
 * Encrypts a receipt for its registered recipient, or for the escrow key when there is none, stores
 * the envelope under its receiptId, and audits the operation.
 */
export async function encryptAndStore(deps: EncryptDeps, input: EncryptInput): Promise<EncryptOutcome> {
  const { receipt, caller } = input;
  const [{ user, cardTag, keyring }] = await Promise.all([
    cardOf(deps, input.recipientHashedPan),
    claimMerchant(deps, receipt.merchant.merchantId, caller),
  ]);
  const now = deps.clock.now();
  const seal = (recipient: Recipient): SealedEnvelope => sealReceiptEnvelope(receipt, recipient);
  const forUser = user ? await sealForUser(deps, user, seal, input) : undefined;
  const userId = forUser && user ? user.userId : null;
  const isEscrowed = userId === null;
  const sealed =
    forUser ??
    sealReceipt(
      deps,
      receipt,
      { keyId: deps.escrow.keyId, publicKey: await deps.escrow.publicKey() },
      {
        requestId: input.requestId,
      },
    );
  const recipientKeyId = isEscrowed ? deps.escrow.keyId : user!.keyId;
  const retentionDays = isEscrowed ? deps.config.escrowRetentionDays : deps.config.receiptRetentionDays;
  const expiresAt = new Date(now.getTime() + retentionDays * DAY_MS);
  const envelope: ReceiptEnvelope = {
    ...sealed,
    createdAt: now.toISOString(),
    expiresAt: expiresAt.toISOString(),
    isEscrowed,
    escrowKeyId: isEscrowed ? deps.escrow.keyId : null,
  };
  const ttl = Math.floor(expiresAt.getTime() / 1000);
  // Nothing on the receipt names its card: a claim (escrowed) or a match (the user's own) finds it by
  // its evidence entries, written just before it (bound to its digest), keyed and sealed under the card-tag key.
  const stored: StoredReceipt = {
    receiptId: receipt.receiptId,
    envelope,
    merchantClientId: caller.clientId,
    ...(userId ? { recipientUserId: userId } : {}),
    requestDigest: boundDigest(input.requestDigest, cardTag),
    createdAt: now.toISOString(),
    ttl,
    ...(input.paymentStatus ? { paymentStatus: input.paymentStatus } : {}),
  };
  const evidence =
    cardTag && keyring
      ? evidenceEntriesFor(keyring, {
          tag: cardTag,
          facts: claimFactsOf(receipt),
          receipt: stored,
          ttl,
          widthMs: evidenceWidthMs(deps),
          binding: stored.requestDigest,
        })
      : [];
  // The audit record is of the cryptographic operation, which has happened whatever storing finds, so
  // the two writes go out together rather than one after the other.
  const [outcome] = await Promise.all([
    deps.repos.receipts.putIfAbsent(stored, evidence),
    deps.audit.record({
      action: isEscrowed ? 'escrow.wrap' : 'receipt.encrypt',
      outcome: 'success',
      requestId: input.requestId,
      clientId: caller.clientId,
      receiptId: receipt.receiptId,
      transactionId: receipt.transaction.transactionId,
      keyId: recipientKeyId,
      ...(userId ? { userId } : {}),
      ...(isEscrowed ? { escrowKeyId: deps.escrow.keyId } : {}),
      ...(cardTag ? { cardTagPrefix: cardTagPrefix(cardTag) } : {}),
    }),
  ]);
  if (!outcome.stored) {
    const { existing } = outcome;
    // Under any version of the card's tag: a retry across a card-tag key rotation is still a retry.
    const digests =
      keyring && input.recipientHashedPan
        ? keyring.tagsOf(input.recipientHashedPan).map((tag) => boundDigest(input.requestDigest, tag))
        : [boundDigest(input.requestDigest, null)];
    if (existing.merchantClientId === caller.clientId && digests.includes(existing.requestDigest)) {
      return {
        envelope: existing.envelope,
        recipientUserId: existing.recipientUserId ?? null,
        ...(existing.paymentStatus ? { paymentStatus: existing.paymentStatus } : {}),
      };
    }
    throw new ConflictError('A different receipt with this receiptId already exists', { field: 'receiptId' });
  }
  // Counted once per stored receipt: an identical retry returned above and is not a second receipt.
  deps.telemetry.count(isEscrowed ? 'ReceiptsEscrowed' : 'ReceiptsEncrypted');
  return {
    envelope,
    recipientUserId: userId,
    ...(stored.paymentStatus ? { paymentStatus: stored.paymentStatus } : {}),
  };
}
