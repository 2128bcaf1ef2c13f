import type { CardTagKeyring } from '../crypto/card-tag.js';
import { openRecord, sealRecord } from '../crypto/sealed-record.js';
import type { DigitalReceipt } from '../receipts/schemas.js';
import { refundBasisOf, type RefundBasis } from '@receipt-service/receipt-core';

/**
 * What a refund receipt is made from: the sale's merchant, card and lines with their tax shares
 * (the SDK's refundBasisOf). The service has the sale in clear only while it creates the payment;
 * this is kept sealed under a key derived from the card-tag key (lib/crypto/sealed-record.ts) and
 * bound to the payment's receipt, so a copy of the payments table shows no line, price or merchant.
 */
export type { RefundBasis };

const PURPOSE = 'payment-refund-basis';
const contextOf = (merchantClientId: string, receiptId: string) => `${merchantClientId}#${receiptId}`;

export const basisOf: (receipt: DigitalReceipt) => RefundBasis = refundBasisOf;

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
 * A UUID (RFC 9562 version 8) derived from `parts` (the SDK's): the same parts always give the same
 * id, so a refund receipt keeps its receiptId however often its refund is recorded or its event delivered.
 */
export { derivedUuid } from '@receipt-service/receipt-core';

const REASON_PURPOSE = 'refund-reason';

/**
 * A refund's `reason` is text the cardholder reads on the refund receipt: kept sealed like the basis
 * (its own derived key), bound to the payment's receipt and the refund, never in clear at rest.
 */
export const sealReason = (
  keyring: CardTagKeyring,
  merchantClientId: string,
  receiptId: string,
  refundId: string,
  reason: string,
): string =>
  sealRecord(keyring, REASON_PURPOSE, `${contextOf(merchantClientId, receiptId)}#${refundId}`, reason);

/** The sealed reason of a refund request; undefined when it has none. */
export function openReason(
  keyring: CardTagKeyring,
  merchantClientId: string,
  receiptId: string,
  request: { refundId: string; sealedReason?: string | undefined; reason?: string | undefined },
): string | undefined {
  if (request.sealedReason === undefined) return request.reason;
  const reason = openRecord<string>(
    keyring,
    REASON_PURPOSE,
    `${contextOf(merchantClientId, receiptId)}#${request.refundId}`,
    request.sealedReason,
  );
  if (reason === undefined) throw new Error('the refund reason of this request does not open');
  return reason;
}
