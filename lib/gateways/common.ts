import { createHash } from 'node:crypto';
import { InvalidRequestError } from '../kernel/errors.js';
import type { CardReferences, ReceiptPointers } from './port.js';

/**
 * A provider idempotency key derived from the receipt's key. Hashing keeps it within every provider's
 * length limit (Square payments: 45) whatever the caller sends, and the per-call prefix keeps the order
 * and the payment of one receipt from sharing a key. Prefixes are at most 4 characters: 4 + 1 + 40 = 45.
 */
export function providerIdempotencyKey(prefix: string, idempotencyKey: string): string {
  if (prefix.length > 4) throw new Error('Idempotency key prefixes are at most 4 characters');
  if (idempotencyKey.length === 0)
    throw new InvalidRequestError('idempotencyKey must not be empty', [
      { field: 'idempotencyKey', message: 'must not be empty' },
    ]);
  const digest = createHash('sha256').update(idempotencyKey, 'utf8').digest('base64url');
  return `${prefix}-${digest.slice(0, 40)}`;
}

export function assertMinorUnits(field: string, value: number, { allowZero }: { allowZero: boolean }): void {
  if (!Number.isSafeInteger(value) || value < 0 || (!allowZero && value === 0)) {
    const message = `must be a ${allowZero ? 'non-negative' : 'positive'} integer`;
    throw new InvalidRequestError(`${field} ${message}`, [{ field, message }]);
  }
}

export function normaliseCurrency(currency: string): string {
  if (!/^[A-Za-z]{3}$/.test(currency)) {
    throw new InvalidRequestError('currency must be a three-letter ISO 4217 code', [
      { field: 'currency', message: 'must be a three-letter ISO 4217 code' },
    ]);
  }
  return currency.toUpperCase();
}

export function pointerMetadata(pointers: ReceiptPointers): Record<string, string> {
  return {
    receiptId: pointers.receiptId,
    transactionId: pointers.transactionId,
    merchantId: pointers.merchantId,
  };
}

/** Pointers only when all three are present: a payment missing one cannot be matched to a receipt. */
export function pointersFromMetadata(
  metadata: Record<string, string | null | undefined> | null | undefined,
): ReceiptPointers | null {
  const receiptId = metadata?.receiptId;
  const transactionId = metadata?.transactionId;
  const merchantId = metadata?.merchantId;
  if (!receiptId || !transactionId || !merchantId) return null;
  return { receiptId, transactionId, merchantId };
}

type Given = string | null | undefined;

/**
 * A provider's references in the port's shape: empty and null values dropped (absent, never made
 * up), the network in lower case, last four and merchant category code only when they are four digits.
 */
export function cardReferencesOf(fields: {
  network?: Given;
  authorizationCode?: Given;
  networkTransactionId?: Given;
  last4?: Given;
  statementDescriptor?: Given;
  merchantCategoryCode?: Given;
  acquirerReferenceNumber?: Given;
  providerIds: Partial<Record<keyof CardReferences['providerIds'], Given>>;
}): CardReferences {
  const text = (value: Given, max: number) =>
    typeof value === 'string' && value.trim().length > 0 ? value.trim().slice(0, max) : undefined;
  const digits = (value: Given) => (typeof value === 'string' && /^\d{4}$/.test(value) ? value : undefined);
  const present = <T extends Record<string, string | undefined>>(record: T) =>
    Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as {
      [K in keyof T]?: string;
    };
  const ids = fields.providerIds;
  return {
    ...present({
      network: text(fields.network, 32)?.toLowerCase(),
      authorizationCode: text(fields.authorizationCode, 64),
      networkTransactionId: text(fields.networkTransactionId, 128),
      last4: digits(fields.last4),
      statementDescriptor: text(fields.statementDescriptor, 128),
      merchantCategoryCode: digits(fields.merchantCategoryCode),
      acquirerReferenceNumber: text(fields.acquirerReferenceNumber, 128),
    }),
    providerIds: present({
      paymentIntentId: text(ids.paymentIntentId, 255),
      chargeId: text(ids.chargeId, 255),
      paymentId: text(ids.paymentId, 255),
      refundId: text(ids.refundId, 255),
    }),
  };
}
