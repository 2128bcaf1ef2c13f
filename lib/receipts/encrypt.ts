import { createHash } from 'node:crypto';
import type { Caller } from '../api-key-auth.js';
import { parsePublicKey } from '../crypto/keys.js';
import { sealEnvelope, type Recipient } from '../crypto/envelope.js';
import { panHashPrefix } from '../db/audit.js';
import type { ReceiptEnvelope, StoredReceipt } from '../db/receipts.js';
import type { AppDeps } from '../deps.js';
import { ConflictError, EncryptionError } from '../errors.js';
import type { DigitalReceipt } from './schemas.js';

export type EncryptDeps = Pick<
  AppDeps,
  'config' | 'clock' | 'repos' | 'audit' | 'escrow' | 'logger' | 'telemetry'
>;

export interface EncryptInput {
  receipt: DigitalReceipt;
  /** The registered user to encrypt for, found by hashedPan; absent means the receipt is escrowed. */
  recipientHashedPan?: string;
  /** sha256 of a nested-form recipientIdentifier: kept for the record, never matched to a user. */
  recipientIdentifierHash?: string;
  caller: Caller;
  requestId: string;
  /** A digest of the validated request: an identical retry returns the first envelope. */
  requestDigest: string;
}

export interface EncryptOutcome {
  envelope: ReceiptEnvelope;
  recipientUserId: string | null;
}

const DAY_MS = 86_400_000;

/** sha256 of a canonical rendering of the request, for idempotent retries; never stored with content. */
export const digestOf = (value: unknown): string =>
  createHash('sha256').update(JSON.stringify(value)).digest('hex');

async function recipientFor(
  deps: EncryptDeps,
  hashedPan: string | undefined,
): Promise<{ recipient: Recipient; userId: string | null }> {
  const user = hashedPan ? await deps.repos.users.getByHashedPan(hashedPan) : null;
  if (user)
    return {
      recipient: { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) },
      userId: user.userId,
    };
  return { recipient: { keyId: deps.escrow.keyId, publicKey: await deps.escrow.publicKey() }, userId: null };
}

/**
 * Encrypts a receipt for its registered recipient, or for the escrow key when there is none, stores
 * the envelope under its receiptId, and audits the operation.
 */
export async function encryptAndStore(deps: EncryptDeps, input: EncryptInput): Promise<EncryptOutcome> {
  const { receipt, caller } = input;
  const { recipient, userId } = await recipientFor(deps, input.recipientHashedPan);
  const isEscrowed = userId === null;
  const now = deps.clock.now();
  let sealed;
  try {
    sealed = sealEnvelope(
      Buffer.from(JSON.stringify(receipt), 'utf8'),
      {
        version: receipt.version,
        receiptId: receipt.receiptId,
        merchantId: receipt.merchant.merchantId,
        transactionId: receipt.transaction.transactionId,
      },
      recipient,
    );
  } catch (error) {
    deps.logger.error('sealing failed', {
      error: error instanceof Error ? error.name : 'unknown',
      requestId: input.requestId,
    });
    throw new EncryptionError();
  }
  const retentionDays = isEscrowed ? deps.config.escrowRetentionDays : deps.config.receiptRetentionDays;
  const expiresAt = new Date(now.getTime() + retentionDays * DAY_MS);
  const envelope: ReceiptEnvelope = {
    ...sealed,
    createdAt: now.toISOString(),
    expiresAt: expiresAt.toISOString(),
    isEscrowed,
    escrowKeyId: isEscrowed ? deps.escrow.keyId : null,
  };
  const stored: StoredReceipt = {
    receiptId: receipt.receiptId,
    envelope,
    merchantClientId: caller.clientId,
    ...(userId ? { recipientUserId: userId } : {}),
    ...(isEscrowed && input.recipientHashedPan ? { pendingRecipient: input.recipientHashedPan } : {}),
    ...(input.recipientIdentifierHash ? { recipientIdentifierHash: input.recipientIdentifierHash } : {}),
    requestDigest: input.requestDigest,
    createdAt: now.toISOString(),
    ttl: Math.floor(expiresAt.getTime() / 1000),
  };
  // The audit record is of the cryptographic operation, which has happened whatever storing finds, so
  // the two writes go out together rather than one after the other.
  const [outcome] = await Promise.all([
    deps.repos.receipts.putIfAbsent(stored),
    deps.audit.record({
      action: isEscrowed ? 'escrow.wrap' : 'receipt.encrypt',
      outcome: 'success',
      requestId: input.requestId,
      clientId: caller.clientId,
      receiptId: receipt.receiptId,
      transactionId: receipt.transaction.transactionId,
      keyId: recipient.keyId,
      ...(userId ? { userId } : {}),
      ...(isEscrowed ? { escrowKeyId: deps.escrow.keyId } : {}),
      ...(input.recipientHashedPan ? { panHashPrefix: panHashPrefix(input.recipientHashedPan) } : {}),
    }),
  ]);
  if (!outcome.stored) {
    const { existing } = outcome;
    if (existing.merchantClientId === caller.clientId && existing.requestDigest === input.requestDigest) {
      return { envelope: existing.envelope, recipientUserId: existing.recipientUserId ?? null };
    }
    throw new ConflictError('A different receipt with this receiptId already exists', { field: 'receiptId' });
  }
  // Counted once per stored receipt: an identical retry returned above and is not a second receipt.
  deps.telemetry.count(isEscrowed ? 'ReceiptsEscrowed' : 'ReceiptsEncrypted');
  return { envelope, recipientUserId: userId };
}
