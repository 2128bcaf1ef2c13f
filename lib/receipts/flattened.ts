import { createHash } from 'node:crypto';
import * as z from 'zod';
import { amountProblems } from './amounts.js';
import { countryCode, currency, dateTime, hashedPan, money, uuid } from '../kernel/fields.js';
import {
  cardBrands,
  checkLineTotal,
  MAX_ITEMS,
  paymentMethods,
  RECEIPT_VERSION,
  type DigitalReceipt,
  type ReceiptLineItem,
} from './schemas.js';

/**
 * The flattened receipt fields shared by receipts/encrypt and payments/{gateway}/create. Required:
 * receiptId, merchantId, merchantName, transactionId and the three amounts; everything else has a
 * documented default. Amounts must add up (docs/API.md): subtotal = Σ items' totalPrice and
 * totalAmount = subtotal + taxAmount.
 */
const text = (max = 256) => z.string().max(max);

export const flattenedItemSchema = z
  .strictObject({
    lineItemId: uuid,
    name: text().min(1),
    quantity: z.number().positive().max(1_000_000),
    unitPrice: money,
    totalPrice: money,
    category: text(128).optional(),
    taxes: z
      .array(
        z.strictObject({
          name: text().optional(),
          rate: z.number().min(0).max(1).optional(),
          amount: money.optional(),
        }),
      )
      .max(20)
      .optional(),
  })
  .superRefine(checkLineTotal)
  .meta({
    id: 'FlattenedLineItem',
    description: 'totalPrice must equal quantity × unitPrice, rounded half away from zero to the minor unit.',
  });

export const flattenedReceiptFields = {
  version: text(32).min(1).default(RECEIPT_VERSION),
  receiptId: uuid,
  merchantId: uuid,
  merchantName: text().min(1),
  merchantStreet: text().optional(),
  merchantCity: text().optional(),
  merchantState: text().optional(),
  merchantPostalCode: text(32).optional(),
  merchantCountry: countryCode.optional(),
  merchantTaxId: text(64).optional(),
  merchantContactEmail: z.email().max(320).optional(),
  transactionId: uuid,
  transactionDate: dateTime.optional(),
  transactionTimezone: text(64).optional(),
  paymentMethod: z.enum(paymentMethods).default('card'),
  cardLast4: z
    .string()
    .regex(/^\d{4}$/, 'must be the last 4 digits')
    .optional(),
  cardBrand: z.enum(cardBrands).optional(),
  currency: currency.default('USD'),
  subtotal: money.min(0),
  taxAmount: money.min(0),
  totalAmount: money.min(0),
  items: z.array(flattenedItemSchema).max(MAX_ITEMS).default([]),
  mockItems: z.boolean().default(false),
  recipientHashedPan: hashedPan.optional(),
};

export const flattenedReceiptSchema = z.strictObject(flattenedReceiptFields);
export type FlattenedReceipt = z.infer<typeof flattenedReceiptSchema>;

/** Adds the amount rules (lib/receipts/amounts.ts) to any object schema built from the flattened fields. */
export function checkAmounts(
  receipt: Pick<FlattenedReceipt, 'items' | 'mockItems' | 'subtotal' | 'taxAmount' | 'totalAmount'>,
  ctx: z.RefinementCtx,
): void {
  if (receipt.items.length === 0 && !receipt.mockItems) {
    ctx.addIssue({
      code: 'custom',
      path: ['items'],
      message: 'must list at least one item (or set mockItems: true)',
    });
  }
  const problems = amountProblems({
    lines: receipt.items,
    subtotal: receipt.subtotal,
    tax: receipt.taxAmount,
    total: receipt.totalAmount,
  });
  for (const problem of problems) {
    ctx.addIssue(
      problem.amount === 'subtotal'
        ? {
            code: 'custom',
            path: ['subtotal'],
            message: `must equal the sum of the items' totalPrice (${problem.expected})`,
          }
        : {
            code: 'custom',
            path: ['totalAmount'],
            message: `must equal subtotal + taxAmount (${problem.expected})`,
          },
    );
  }
}

const MOCK_CATALOGUE = [
  { name: 'Flat white', category: 'Beverages' },
  { name: 'Almond croissant', category: 'Bakery' },
  { name: 'Sparkling water 500 ml', category: 'Beverages' },
  { name: 'Granola bowl', category: 'Breakfast' },
  { name: 'Reusable tote bag', category: 'Merchandise' },
];

/**
 * Plausible items for a demo receipt whose totals are already fixed: up to three lines whose
 * totalPrice adds up exactly to `subtotal`. Deterministic per receipt, so a retry builds the same ones.
 */
export function mockItems(receiptId: string, subtotal: number): ReceiptLineItem[] {
  const seed = createHash('sha256').update(receiptId).digest();
  const count = subtotal === 0 ? 1 : Math.min(3, Math.max(1, subtotal));
  const shares = Array.from({ length: count }, (_, index) => 1 + ((seed[index] ?? 0) % 5));
  const weight = shares.reduce((total, share) => total + share, 0);
  let remaining = subtotal;
  return shares.map((share, index) => {
    const totalPrice = index === count - 1 ? remaining : Math.floor((subtotal * share) / weight);
    remaining -= totalPrice;
    const entry = MOCK_CATALOGUE[((seed[index + 8] ?? 0) + index) % MOCK_CATALOGUE.length]!;
    const lineItemId = [
      seed.subarray(index * 4, index * 4 + 4).toString('hex'),
      '0000',
      '4000',
      '8000',
      '000000000000',
    ];
    return {
      lineItemId: `${lineItemId[0]}-${lineItemId[1]}-${lineItemId[2]}-${lineItemId[3]}-${lineItemId[4]}`,
      name: entry.name,
      category: entry.category,
      quantity: 1,
      unitPrice: totalPrice,
      totalPrice,
    };
  });
}

/** The DigitalReceipt a flattened request describes, ready to encrypt. */
export function toDigitalReceipt(input: FlattenedReceipt, now: Date): DigitalReceipt {
  const items: ReceiptLineItem[] =
    input.items.length === 0 && input.mockItems
      ? mockItems(input.receiptId, input.subtotal)
      : input.items.map((item) => ({
          lineItemId: item.lineItemId,
          name: item.name,
          quantity: item.quantity,
          unitPrice: item.unitPrice,
          totalPrice: item.totalPrice,
          ...(item.category !== undefined ? { category: item.category } : {}),
          ...(item.taxes ? { taxes: item.taxes } : {}),
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
    version: input.version,
    receiptId: input.receiptId,
    merchant: {
      merchantId: input.merchantId,
      name: input.merchantName,
      ...(hasAddress ? { address } : {}),
      ...(input.merchantTaxId !== undefined ? { taxId: input.merchantTaxId } : {}),
      ...(input.merchantContactEmail !== undefined ? { contactEmail: input.merchantContactEmail } : {}),
    },
    transaction: {
      transactionId: input.transactionId,
      datetime: input.transactionDate ?? now.toISOString(),
      ...(input.transactionTimezone !== undefined ? { timezone: input.transactionTimezone } : {}),
      paymentMethod: input.paymentMethod,
      ...(card.last4 !== undefined || card.brand !== undefined ? { cardDetails: card } : {}),
    },
    items,
    summary: {
      subtotal: input.subtotal,
      totalTax: input.taxAmount,
      totalDiscount: 0,
      total: input.totalAmount,
      currency: input.currency,
      itemCount: items.length,
    },
    createdAt: now.toISOString(),
  };
}
