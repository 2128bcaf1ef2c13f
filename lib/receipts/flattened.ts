import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import {
  FLATTENED_DEFAULTS,
  mockItems as sdkMockItems,
  toDigitalReceipt as sdkToDigitalReceipt,
} from '@receipt-service/receipt-core';
import { amountProblems } from './amounts.js';
import { receiptCredentialSchema } from './credential-field.js';
import { ReceiptSignatureRefusedError } from '../merchants/vocabulary.js';
import { countryCode, currency, dateTime, hashedPan, money, uuid } from '../kernel/fields.js';
import {
  cardBrands,
  checkLineTotal,
  MAX_ITEMS,
  paymentMethods,
  type DigitalReceipt,
  type ReceiptLineItem,
} from './schemas.js';
import {
  adjustmentTotal,
  checkTaxBreakdown,
  documentAdditions,
  lineAdditions,
  lineTaxAdditions,
  merchantAdditions,
  taxBreakdownSchema,
} from './standard-fields.js';

/**
 * The flattened receipt fields shared by receipts/encrypt and payments/{gateway}/create. Required:
 * receiptId, merchantId, merchantName, transactionId and the three amounts; everything else has a
 * documented default. Amounts must add up (docs/API.md): subtotal = Σ items' totalPrice and
 * totalAmount = subtotal − Σ allowances + Σ charges + taxAmount; a tax breakdown agrees with the lines.
 */
const text = (max = 256) => z.string().max(max);

export const flattenedItemSchema = lazySchema(() =>
  z
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
            ...lineTaxAdditions,
          }),
        )
        .max(20)
        .optional(),
      ...lineAdditions,
    })
    .superRefine(checkLineTotal)
    .meta({
      id: 'FlattenedLineItem',
      description:
        'totalPrice must equal quantity × unitPrice, rounded half away from zero to the minor unit.',
    }),
);

export const flattenedReceiptFields = {
  // No zod default: the version follows from the fields given (toDigitalReceipt), as on a till.
  version: text(32).min(1).optional().meta({
    description:
      'The receipt schema version: "1.2" by default when the request gives a DigitalReceipt 1.2 field, "1.1" otherwise.',
  }),
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
  merchantLegalName: merchantAdditions.legalName,
  merchantVatId: merchantAdditions.vatId,
  merchantEndpoint: merchantAdditions.endpoint,
  transactionId: uuid,
  transactionDate: dateTime.optional(),
  transactionTimezone: text(64).optional(),
  paymentMethod: z.enum(paymentMethods).default(FLATTENED_DEFAULTS.paymentMethod),
  cardLast4: z
    .string()
    .regex(/^\d{4}$/, 'must be the last 4 digits')
    .optional(),
  cardBrand: z.enum(cardBrands).optional(),
  currency: currency.default(FLATTENED_DEFAULTS.currency),
  subtotal: money.min(0),
  taxAmount: money.min(0),
  totalAmount: money.min(0),
  items: z.array(flattenedItemSchema).max(MAX_ITEMS).default([]),
  mockItems: z.boolean().default(FLATTENED_DEFAULTS.mockItems),
  ...documentAdditions,
  taxBreakdown: taxBreakdownSchema.optional(),
  recipientHashedPan: hashedPan.optional(),
  // Issue 39: the receipt as an SD-JWT VC; checked and sealed, never part of the DigitalReceipt mapping.
  receiptCredential: receiptCredentialSchema.optional(),
};

export const flattenedReceiptSchema = lazySchema(() => z.strictObject(flattenedReceiptFields));
export type FlattenedReceipt = z.infer<typeof flattenedReceiptSchema>;

/** Adds the amount rules (lib/receipts/amounts.ts) to any object schema built from the flattened fields. */
export function checkAmounts(
  receipt: Pick<
    FlattenedReceipt,
    | 'items'
    | 'mockItems'
    | 'subtotal'
    | 'taxAmount'
    | 'totalAmount'
    | 'allowances'
    | 'charges'
    | 'taxBreakdown'
  >,
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
    allowances: adjustmentTotal(receipt.allowances),
    charges: adjustmentTotal(receipt.charges),
  });
  const adjusted = receipt.allowances !== undefined || receipt.charges !== undefined;
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
            message: adjusted
              ? `must equal subtotal − allowances + charges + taxAmount (${problem.expected})`
              : `must equal subtotal + taxAmount (${problem.expected})`,
          },
    );
  }
  checkTaxBreakdown(
    {
      lines: receipt.items,
      allowances: receipt.allowances,
      charges: receipt.charges,
      breakdown: receipt.taxBreakdown,
      totalTax: receipt.taxAmount,
    },
    { breakdown: ['taxBreakdown'], lines: ['items'], totalTax: ['taxAmount'] },
    ctx,
  );
}

/**
 * The mapping to a DigitalReceipt, mock items included, is receipt-core's (packages/receipt-core/src/digital-receipt.ts):
 * the one implementation a till signs with and the service seals with, so the two cannot drift.
 */
export const mockItems: (receiptId: string, subtotal: number) => ReceiptLineItem[] = sdkMockItems;

/**
 * The DigitalReceipt a flattened request describes, ready to encrypt. `now` is the request's time;
 * a signed request leaves it out, and the receipt then takes its times from transactionDate.
 */
export const toDigitalReceipt: (input: FlattenedReceipt, now?: Date) => DigitalReceipt = sdkToDigitalReceipt;

/**
 * The receipt a flattened request seals. Unsigned, its times are the request's (`now`); signed, they
 * are its transactionDate, the one time the merchant could sign (docs/ENVELOPE.md), so a signed
 * request without one is refused.
 */
export function receiptOfFlattened(input: FlattenedReceipt, signed: boolean, now: Date): DigitalReceipt {
  if (!signed) return toDigitalReceipt(input, now);
  if (input.transactionDate === undefined) {
    throw new ReceiptSignatureRefusedError(
      "A signed flattened request gives transactionDate: it is the receipt's time (transaction.datetime and " +
        'createdAt), part of what the merchant signs',
      'no_transaction_date',
    );
  }
  return toDigitalReceipt(input);
}
