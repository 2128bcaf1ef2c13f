/**
 * The DigitalReceipt that a flattened request (receipts/encrypt's flattened form, payments/{gateway}/
 * create) describes: the service's own mapping, which the service imports from here, so what a till
 * builds and signs with the SDK and what the service seals cannot drift apart. Pure and
 * platform-neutral: no clock, no randomness, no Node module.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { components } from './generated/receipt.js';

export type DigitalReceipt = components['schemas']['DigitalReceipt'];
type LineItem = components['schemas']['ReceiptLineItem'];

/**
 * The receipt schema version the service writes for a receipt without DigitalReceipt 1.2's fields
 * ("1.0" receipts keep opening); one that gives any of them is RECEIPT_VERSION_12.
 */
export const RECEIPT_VERSION = '1.1';
export const RECEIPT_VERSION_12 = '1.2';
/** What the service assumes for a flattened field left out (the request schemas' defaults). */
export const FLATTENED_DEFAULTS = {
  version: RECEIPT_VERSION,
  paymentMethod: 'card',
  currency: 'USD',
  mockItems: false,
} as const;

/**
 * The receipt fields of a flattened request: the flattened encrypt body, or a payment create body
 * (whose `amount`, `cardNonce` and `recipientHashedPan` are not part of the receipt and are ignored).
 */
export type FlattenedReceipt = Omit<components['schemas']['FlattenedEncryptRequest'], 'recipientHashedPan'>;

const MOCK_CATALOGUE = [
  { name: 'Flat white', category: 'Beverages' },
  { name: 'Almond croissant', category: 'Bakery' },
  { name: 'Sparkling water 500 ml', category: 'Beverages' },
  { name: 'Granola bowl', category: 'Breakfast' },
  { name: 'Reusable tote bag', category: 'Merchandise' },
];

/**
 * Plausible items for a demo receipt whose totals are already fixed (`mockItems: true`): up to three
 * lines whose totalPrice adds up exactly to `subtotal`. Deterministic per receipt, so a retry builds
 * the same ones.
 */
export function mockItems(receiptId: string, subtotal: number): LineItem[] {
  const seed = sha256(utf8ToBytes(receiptId));
  const count = subtotal === 0 ? 1 : Math.min(3, Math.max(1, subtotal));
  const shares = Array.from({ length: count }, (_, index) => 1 + ((seed[index] ?? 0) % 5));
  const weight = shares.reduce((total, share) => total + share, 0);
  let remaining = subtotal;
  return shares.map((share, index) => {
    const totalPrice = index === count - 1 ? remaining : Math.floor((subtotal * share) / weight);
    remaining -= totalPrice;
    const entry = MOCK_CATALOGUE[((seed[index + 8] ?? 0) + index) % MOCK_CATALOGUE.length]!;
    const head = bytesToHex(seed.subarray(index * 4, index * 4 + 4));
    return {
      lineItemId: `${head}-0000-4000-8000-000000000000`,
      name: entry.name,
      category: entry.category,
      quantity: 1,
      unitPrice: totalPrice,
      totalPrice,
    };
  });
}

/** Whether a flattened request gives any field DigitalReceipt 1.2 added (its version then defaults to 1.2). */
export function usesVersion12(input: FlattenedReceipt): boolean {
  const documentLevel = [
    input.merchantLegalName,
    input.merchantVatId,
    input.merchantEndpoint,
    input.allowances,
    input.charges,
    input.taxBreakdown,
    input.receiptCode,
    input.fiscal,
  ];
  return (
    documentLevel.some((field) => field !== undefined) ||
    (input.items ?? []).some(
      (item) =>
        item.unitCode !== undefined ||
        item.gtin !== undefined ||
        (item.taxes ?? []).some((tax) => tax.category !== undefined),
    )
  );
}

/**
 * The DigitalReceipt a flattened request describes, as the service seals it.
 *
 * `now` is when the service received the request: it is the receipt's `createdAt`, and its
 * `transaction.datetime` when the request gives no `transactionDate`. A merchant that signs the
 * receipt (`signReceipt`) leaves `now` out: the receipt must then say its own time, so the request
 * needs `transactionDate`, which is both the transaction's time and `createdAt` (the service seals a
 * signed flattened request exactly so, adding no time of its own to bytes the merchant signed).
 */
export function toDigitalReceipt(input: FlattenedReceipt, now?: Date | string): DigitalReceipt {
  const at = now === undefined ? undefined : typeof now === 'string' ? now : now.toISOString();
  const createdAt = at ?? input.transactionDate;
  if (createdAt === undefined) {
    throw new TypeError(
      'toDigitalReceipt: a receipt without `now` takes its time from transactionDate, and there is none',
    );
  }
  const version = input.version ?? (usesVersion12(input) ? RECEIPT_VERSION_12 : FLATTENED_DEFAULTS.version);
  const paymentMethod = input.paymentMethod ?? FLATTENED_DEFAULTS.paymentMethod;
  const currency = input.currency ?? FLATTENED_DEFAULTS.currency;
  const listed = input.items ?? [];
  const items: LineItem[] =
    listed.length === 0 && (input.mockItems ?? FLATTENED_DEFAULTS.mockItems)
      ? mockItems(input.receiptId, input.subtotal)
      : listed.map((item) => ({
          lineItemId: item.lineItemId,
          name: item.name,
          quantity: item.quantity,
          unitPrice: item.unitPrice,
          totalPrice: item.totalPrice,
          ...(item.category !== undefined ? { category: item.category } : {}),
          ...(item.taxes ? { taxes: item.taxes } : {}),
          ...(item.unitCode !== undefined ? { unitCode: item.unitCode } : {}),
          ...(item.gtin !== undefined ? { gtin: item.gtin } : {}),
        }));
  const address = {
    street: input.merchantStreet,
    city: input.merchantCity,
    state: input.merchantState,
    postalCode: input.merchantPostalCode,
    country: input.merchantCountry,
  };
  const hasAddress = Object.values(address).some((part) => part !== undefined);
  const card = { last4: input.cardLast4, brand: input.cardBrand };
  return {
    version,
    receiptId: input.receiptId,
    merchant: {
      merchantId: input.merchantId,
      name: input.merchantName,
      ...(hasAddress ? { address } : {}),
      ...(input.merchantTaxId !== undefined ? { taxId: input.merchantTaxId } : {}),
      ...(input.merchantContactEmail !== undefined ? { contactEmail: input.merchantContactEmail } : {}),
      ...(input.merchantLegalName !== undefined ? { legalName: input.merchantLegalName } : {}),
      ...(input.merchantVatId !== undefined ? { vatId: input.merchantVatId } : {}),
      ...(input.merchantEndpoint !== undefined ? { endpoint: input.merchantEndpoint } : {}),
    },
    transaction: {
      transactionId: input.transactionId,
      datetime: input.transactionDate ?? createdAt,
      ...(input.transactionTimezone !== undefined ? { timezone: input.transactionTimezone } : {}),
      paymentMethod,
      ...(card.last4 !== undefined || card.brand !== undefined ? { cardDetails: card } : {}),
    },
    items,
    summary: {
      subtotal: input.subtotal,
      totalTax: input.taxAmount,
      // The flattened form's lines carry no discounts: what is off the receipt is its allowances.
      totalDiscount: (input.allowances ?? []).reduce((sum, allowance) => sum + allowance.amount, 0),
      total: input.totalAmount,
      currency,
      itemCount: items.length,
      ...(input.taxBreakdown !== undefined ? { taxBreakdown: input.taxBreakdown } : {}),
    },
    ...(input.allowances !== undefined ? { allowances: input.allowances } : {}),
    ...(input.charges !== undefined ? { charges: input.charges } : {}),
    ...(input.receiptCode !== undefined ? { receiptCode: input.receiptCode } : {}),
    ...(input.fiscal !== undefined ? { fiscal: input.fiscal } : {}),
    createdAt,
  };
}
