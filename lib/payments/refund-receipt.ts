import { createHash } from 'node:crypto';
import type { Recipient } from '../crypto/envelope.js';
import { parsePublicKey } from '../crypto/keys.js';
import type { RefundedLine } from '../db/payments.js';
import type { ReceiptEnvelope, SaleChange, StoredReceipt } from '../db/receipts.js';
import type { AppDeps } from '../app/deps.js';
import type { PaymentStatus } from '../kernel/payment-status.js';
import {
  digitalReceiptSchema,
  RECEIPT_VERSION,
  type DigitalReceipt,
  type ReceiptLineItem,
} from '../receipts/schemas.js';
import { sealReceipt } from '../receipts/seal.js';
import { derivedUuid, type RefundBasis } from './refund-basis.js';

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
  createdAt: Date;
}

/** A refunded line as the cardholder reads it: the sale line, with the part of it given back. */
function refundedItem(basis: RefundBasis, line: RefundedLine): ReceiptLineItem {
  const sold = basis.lines.find((candidate) => candidate.lineItemId === line.lineItemId);
  if (!sold) throw new Error('a refunded line is not a line of the sale');
  const gross = line.quantity * sold.unitPrice;
  // The receipt schema checks totalPrice against quantity × unitPrice less discounts: the part of the
  // line's discounts (or rounding) this refund carries is said as one.
  const difference = Math.sign(gross) * Math.round(Math.abs(gross)) - line.amount;
  return {
    lineItemId: sold.lineItemId,
    name: sold.name,
    quantity: line.quantity,
    unitPrice: sold.unitPrice,
    totalPrice: line.amount,
    ...(sold.sku !== undefined ? { sku: sold.sku } : {}),
    ...(sold.category !== undefined ? { category: sold.category } : {}),
    ...(difference !== 0
      ? { discounts: [{ name: "Share of the line's discounts", type: 'fixed' as const, amount: difference }] }
      : {}),
    ...(line.tax > 0 ? { taxes: [{ name: 'Tax', amount: line.tax }] } : {}),
  };
}

/** The refund receipt's plaintext: a DigitalReceipt of type "refund" naming its sale, amounts positive. */
export function refundReceiptOf(input: RefundReceiptInput): DigitalReceipt {
  const { basis, createdAt } = input;
  const items = input.lines.map((line) => refundedItem(basis, line));
  return digitalReceiptSchema.parse({
    version: RECEIPT_VERSION,
    receiptId: input.receiptId,
    type: 'refund',
    relatedReceiptId: input.sale.receiptId,
    merchant: basis.merchant,
    transaction: {
      transactionId: derivedUuid('refund-transaction', input.receiptId),
      datetime: createdAt.toISOString(),
      ...basis.transaction,
    },
    items,
    summary: {
      subtotal: input.subtotal,
      totalTax: input.tax,
      totalDiscount: 0,
      total: input.amount,
      currency: basis.currency,
      itemCount: items.length,
    },
    ...(input.reason ? { notes: input.reason } : {}),
    metadata: { refundId: input.refundId },
    createdAt: createdAt.toISOString(),
  } satisfies DigitalReceipt);
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
