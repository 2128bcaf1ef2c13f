import { createHash } from 'node:crypto';
import type { Recipient } from '../crypto/envelope.js';
import { parsePublicKey } from '../crypto/keys.js';
import type { RefundedLine } from '../db/payments.js';
import type { ReceiptEnvelope, SaleChange, StoredReceipt } from '../db/receipts.js';
import type { AppDeps } from '../app/deps.js';
import type { PaymentStatus } from '../kernel/payment-status.js';
import { digitalReceiptSchema, type CardTransaction, type DigitalReceipt } from '../receipts/schemas.js';
import { refundReceiptOf as sdkRefundReceiptOf } from '@receipt-service/receipt-core';
import type { MerchantSignature } from '../merchants/receipt-signature.js';
import { sealReceipt } from '../receipts/seal.js';
import type { RefundBasis } from './refund-basis.js';

const DAY_MS = 86_400_000;

export interface RefundReceiptInput {
  receiptId: string;
  sale: StoredReceipt;
  basis: RefundBasis;
  refundId: string;
  lines: RefundedLine[];
  subtotal: number;
  tax: number;
  amount: number;
  paymentStatus: PaymentStatus;
  reason?: string | undefined;
  /** When the service records the refund: the envelope's time, and the receipt's unless signed. */
  createdAt: Date;
  /** A signed refund: the time the merchant gave the receipt, and its checked signature. */
  signed?: { receiptDate: string; merchantSignature: MerchantSignature } | undefined;
  /** The refund's network references as its provider gave them (not covered by a merchant's signature). */
  cardTransaction?: CardTransaction | undefined;
}

/**
 * The refund receipt's plaintext, as the SDK's refundReceiptOf makes it (so a till can sign it), checked
 * against the receipt schema; a signed one carries the merchant's signature.
 */
export function refundReceiptOf(input: RefundReceiptInput): DigitalReceipt {
  const receipt = sdkRefundReceiptOf({
    receiptId: input.receiptId,
    saleReceiptId: input.sale.receiptId,
    basis: input.basis,
    refundId: input.refundId,
    lines: input.lines,
    subtotal: input.subtotal,
    tax: input.tax,
    amount: input.amount,
    reason: input.reason,
    createdAt: input.signed?.receiptDate ?? input.createdAt,
  });
  return digitalReceiptSchema.parse({
    ...receipt,
    ...(input.signed ? { merchantSignature: input.signed.merchantSignature } : {}),
    ...(input.cardTransaction ? { cardTransaction: input.cardTransaction } : {}),
  });
}

export interface SealedRefundReceipt {
  stored: StoredReceipt;
  /** Who the sale was for when the refund receipt was sealed: the transaction checks it still is. */
  recipient: NonNullable<SaleChange['recipient']>;
}

/**
 * Seals the refund receipt for the sale's recipient: the user's current key, or the escrow key when
 * the sale is escrowed (a claim that releases the sale then releases it too, lib/receipts/claim.ts).
 * Null when the sale's user is gone (erased): there is nobody to seal it for.
 */
export async function sealRefundReceipt(
  deps: Pick<AppDeps, 'config' | 'repos' | 'escrow' | 'logger'>,
  input: RefundReceiptInput,
): Promise<SealedRefundReceipt | null> {
  const { sale, createdAt } = input;
  let recipient: Recipient;
  let target: SealedRefundReceipt['recipient'];
  if (sale.recipientUserId) {
    const user = await deps.repos.users.getById(sale.recipientUserId);
    if (!user) return null;
    recipient = { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) };
    target = { userId: user.userId };
  } else {
    recipient = { keyId: deps.escrow.keyId, publicKey: await deps.escrow.publicKey() };
    target = 'escrow';
  }
  const receipt = refundReceiptOf(input);
  const sealed = sealReceipt(deps, receipt, recipient, { refundReceiptId: receipt.receiptId });
  const escrowed = target === 'escrow';
  // Escrowed with its sale, it expires with the sale unless a claim releases both.
  const expiresAt = escrowed
    ? new Date(sale.ttl * 1000)
    : new Date(createdAt.getTime() + deps.config.receiptRetentionDays * DAY_MS);
  const envelope: ReceiptEnvelope = {
    ...sealed,
    createdAt: createdAt.toISOString(),
    expiresAt: expiresAt.toISOString(),
    isEscrowed: escrowed,
    escrowKeyId: escrowed ? deps.escrow.keyId : null,
  };
  return {
    recipient: target,
    stored: {
      receiptId: receipt.receiptId,
      envelope,
      merchantClientId: sale.merchantClientId,
      ...(escrowed ? {} : { recipientUserId: (target as { userId: string }).userId }),
      relatedReceiptId: sale.receiptId,
      paymentStatus: input.paymentStatus,
      requestDigest: createHash('sha256').update(`refund:${input.refundId}`).digest('hex'),
      createdAt: createdAt.toISOString(),
      ttl: Math.floor(expiresAt.getTime() / 1000),
    },
  };
}
