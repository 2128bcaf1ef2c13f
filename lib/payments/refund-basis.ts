import { createHash } from 'node:crypto';
import type { CardTagKeyring } from '../crypto/card-tag.js';
import { openRecord, sealRecord } from '../crypto/sealed-record.js';
import type { BasisLine } from '../db/payments.js';
import type { DigitalReceipt } from '../receipts/schemas.js';
import { lineTaxShares, type SaleAmounts } from './refund-amounts.js';

/**
 * What a refund receipt is made from: the sale's merchant, card and lines with their tax shares.
 * The service has the sale in clear only while it creates the payment; this is kept sealed under a
 * key derived from the card-tag key (lib/crypto/sealed-record.ts) and bound to the payment's
 * receipt, so a copy of the payments table shows no line, price or merchant.
 */
export interface RefundBasis extends SaleAmounts {
  merchant: DigitalReceipt['merchant'];
  transaction: Pick<DigitalReceipt['transaction'], 'paymentMethod' | 'cardDetails' | 'timezone'>;
  currency: string;
}

const PURPOSE = 'payment-refund-basis';
const contextOf = (merchantClientId: string, receiptId: string) => `${merchantClientId}#${receiptId}`;

export function basisOf(receipt: DigitalReceipt): RefundBasis {
  const taxes = lineTaxShares(receipt.items, receipt.summary.totalTax);
  const lines: BasisLine[] = receipt.items.map((item, index) => ({
    lineItemId: item.lineItemId,
    name: item.name,
    quantity: item.quantity,
    unitPrice: item.unitPrice,
    totalPrice: item.totalPrice,
    tax: taxes[index] ?? 0,
    ...(item.category !== undefined ? { category: item.category } : {}),
    ...(item.sku !== undefined ? { sku: item.sku } : {}),
  }));
  const { paymentMethod, cardDetails, timezone } = receipt.transaction;
  return {
    merchant: receipt.merchant,
    transaction: {
      paymentMethod,
      ...(cardDetails ? { cardDetails } : {}),
      ...(timezone !== undefined ? { timezone } : {}),
    },
    currency: receipt.summary.currency,
    lines,
    subtotal: receipt.summary.subtotal,
    totalTax: receipt.summary.totalTax,
    total: receipt.summary.subtotal + receipt.summary.totalTax,
  };
}

export const sealBasis = (
  keyring: CardTagKeyring,
  merchantClientId: string,
  receiptId: string,
  basis: RefundBasis,
): string => sealRecord(keyring, PURPOSE, contextOf(merchantClientId, receiptId), basis);

export function openBasis(
  keyring: CardTagKeyring,
  merchantClientId: string,
  receiptId: string,
  sealed: string,
): RefundBasis {
  const basis = openRecord<RefundBasis>(keyring, PURPOSE, contextOf(merchantClientId, receiptId), sealed);
  // A record that does not open is damage, not a caller's mistake.
  if (!basis) throw new Error('the refund basis of this payment does not open');
  return basis;
}

/**
 * A UUID (RFC 9562 version 8) derived from `parts`: the same parts always give the same id, so a
 * refund receipt keeps its receiptId however often its refund is recorded or its event delivered.
 */
export function derivedUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
