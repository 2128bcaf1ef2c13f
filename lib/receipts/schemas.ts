import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { receiptCredentialSchema } from './credential-field.js';
import { countryCode, currency, dateTime, httpsUrl, money, uuid } from '../kernel/fields.js';
import { expectedLineTotal, sumOfLines, type LineAmounts } from './amounts.js';
import {
  documentAdditions,
  lineAdditions,
  lineTaxAdditions,
  merchantAdditions,
  taxBreakdownSchema,
} from './standard-fields.js';

/**
 * The spec's receipt resources as zod schemas, field for field. Unknown fields are refused (a 400
 * naming each, with the closest known name): a misspelt field must never be dropped silently. Money
 * is always an integer in the currency's smallest unit.
 */
const nonNegativeMoney = lazySchema(() => money.min(0, 'must not be negative'));
const shortText = (max = 256) => z.string().max(max);
/** totalPrice = quantity × unitPrice (rounded to the minor unit) − discounts, where the line says enough. */
export function checkLineTotal(line: LineAmounts, ctx: z.RefinementCtx): void {
  const expected = expectedLineTotal(line);
  if (expected !== undefined && expected !== line.totalPrice) {
    ctx.addIssue({
      code: 'custom',
      path: ['totalPrice'],
      message: `must equal quantity × unitPrice less discounts (${expected})`,
    });
  }
}

export const paymentMethods = ['card', 'cash', 'mobile_wallet', 'bank_transfer', 'other'] as const;
export const cardBrands = ['visa', 'mastercard', 'amex', 'discover', 'other'] as const;
/** Bounds that keep one receipt well inside the 128 KiB body limit. */
export const MAX_ITEMS = 500;

export const addressSchema = lazySchema(() =>
  z
    .strictObject({
      street: shortText().optional(),
      city: shortText().optional(),
      state: shortText().optional(),
      postalCode: shortText(32).optional(),
      country: countryCode.optional(),
    })
    .meta({ id: 'Address' }),
);

export const receiptMerchantSchema = lazySchema(() =>
  z
    .strictObject({
      merchantId: uuid,
      name: shortText().min(1),
      address: addressSchema.optional(),
      taxId: shortText(64).optional(),
      logoUrl: httpsUrl.optional(),
      contactPhone: shortText(32).optional(),
      contactEmail: z.email().max(320).optional(),
      ...merchantAdditions,
    })
    .meta({ id: 'ReceiptMerchant' }),
);

export const cardDetailsSchema = lazySchema(() =>
  z
    .strictObject({
      last4: z
        .string()
        .regex(/^\d{4}$/, 'must be the last 4 digits')
        .optional(),
      brand: z.enum(cardBrands).optional(),
      expiryMonth: z.number().int().min(1).max(12).optional(),
      expiryYear: z.number().int().min(1900).max(9999).optional(),
    })
    .meta({ id: 'CardDetails' }),
);

export const receiptTransactionSchema = lazySchema(() =>
  z
    .strictObject({
      transactionId: uuid,
      datetime: dateTime,
      timezone: shortText(64).optional(),
      paymentMethod: z.enum(paymentMethods),
      cardDetails: cardDetailsSchema.optional(),
      authorizationCode: shortText(64).optional(),
    })
    .meta({ id: 'ReceiptTransaction' }),
);

export const lineItemDiscountSchema = lazySchema(() =>
  z
    .strictObject({
      name: shortText().optional(),
      type: z.enum(['percentage', 'fixed']).optional(),
      value: z.number().min(0).optional(),
      amount: money.optional(),
    })
    .refine(
      (discount) => discount.type !== 'percentage' || discount.value === undefined || discount.value <= 100,
      {
        message: 'a percentage discount value must be between 0 and 100',
        path: ['value'],
      },
    )
    .meta({
      id: 'LineItemDiscount',
      description: 'value is a percentage (0 to 100) or a fixed amount in minor units, per type.',
    }),
);

export const lineItemTaxSchema = lazySchema(() =>
  z
    .strictObject({
      name: shortText().optional(),
      rate: z.number().min(0).max(1).optional(),
      amount: money.optional(),
      ...lineTaxAdditions,
    })
    .meta({ id: 'LineItemTax', description: 'rate is a decimal fraction: 0.08 means 8%.' }),
);

export const receiptLineItemSchema = lazySchema(() =>
  z
    .strictObject({
      lineItemId: uuid,
      sku: shortText(128).nullable().optional(),
      name: shortText().min(1),
      description: shortText(1024).nullable().optional(),
      quantity: z.number().positive().max(1_000_000),
      unitPrice: money,
      totalPrice: money,
      category: shortText(128).nullable().optional(),
      discounts: z.array(lineItemDiscountSchema).max(20).optional(),
      taxes: z.array(lineItemTaxSchema).max(20).optional(),
      ...lineAdditions,
    })
    .superRefine(checkLineTotal)
    .meta({
      id: 'ReceiptLineItem',
      description:
        'totalPrice must equal quantity × unitPrice, rounded half away from zero to the minor unit, less the ' +
        'discounts, whenever every discount gives its amount.',
    }),
);

export const receiptSummarySchema = lazySchema(() =>
  z
    .strictObject({
      subtotal: money,
      totalTax: nonNegativeMoney,
      totalDiscount: nonNegativeMoney,
      tipAmount: nonNegativeMoney.nullable().optional(),
      total: money,
      currency,
      itemCount: z.number().int().min(0),
      taxBreakdown: taxBreakdownSchema.optional(),
    })
    .meta({
      id: 'ReceiptSummary',
      description: 'Amounts are integers in the minor unit of currency (cents for USD).',
    }),
);

export const loyaltyInfoSchema = lazySchema(() =>
  z
    .strictObject({
      programName: shortText().optional(),
      pointsEarned: z.number().int().optional(),
      pointsBalance: z.number().int().optional(),
      memberNumber: shortText(64).optional(),
    })
    .meta({ id: 'LoyaltyInfo' }),
);

/**
 * The merchant's signature, sealed inside the receipt by the service from the request's
 * Receipt-Signature header (docs/ENVELOPE.md, "The merchant's signature"); never sent in a request's receipt.
 */
export const merchantSignatureSchema = lazySchema(() =>
  z
    .strictObject({
      kid: z.string().max(64).meta({ description: 'The signing key (GET /api/v1/merchant-keys/{kid}).' }),
      jws: z
        .string()
        .max(4096)
        .meta({
          description:
            'Compact JWS, payload detached (`<protected>..<signature>`), over the RFC 8785 JSON of this receipt ' +
            'without merchantSignature and cardTransaction (the network references the service seals after the charge).',
        }),
    })
    .meta({
      id: 'MerchantSignature',
      description:
        "The merchant's signature over this receipt: verify it on the device with the SDK's verifyReceiptSignature " +
        'and the key GET /api/v1/merchant-keys/{kid} gives. Set by the service from the Receipt-Signature header ' +
        'after checking it; a request may not put it in a receipt.',
    }),
);

const reference = (max: number) => z.string().min(1).max(max);

/**
 * The card network's references of the payment (or the refund) the service made, as the provider
 * gave them after the charge (DECISIONS, round 4, "Card-network references"): sealed by the service
 * beside merchantSignature and not covered by it (the merchant signs before the charge). A field the
 * provider did not give is absent, never invented; a request may not set the block.
 */
export const cardTransactionSchema = lazySchema(() =>
  z
    .strictObject({
      gateway: z.enum(['gateway_a', 'gateway_b']),
      network: reference(32).optional().meta({
        description: "The card network, lower case as the provider names it: 'visa', 'mastercard', …",
      }),
      authorizationCode: reference(64).optional().meta({
        description: "The issuer's authorization code (Stripe authorization_code, Square auth_result_code).",
      }),
      networkTransactionId: reference(128)
        .optional()
        .meta({ description: "The network's id of the transaction (Stripe network_transaction_id)." }),
      last4: z
        .string()
        .regex(/^\d{4}$/)
        .optional(),
      statementDescriptor: reference(128)
        .optional()
        .meta({ description: "How the charge appears on the cardholder's statement." }),
      merchantCategoryCode: z
        .string()
        .regex(/^\d{4}$/)
        .optional(),
      acquirerReferenceNumber: reference(128).optional().meta({
        description:
          "A refund: the acquirer's reference the network gives it (Stripe destination_details.card.reference).",
      }),
      providerIds: z
        .strictObject({
          paymentIntentId: reference(255).optional(),
          chargeId: reference(255).optional(),
          paymentId: reference(255).optional(),
          refundId: reference(255).optional(),
        })
        .meta({
          description:
            "The provider's own ids: a gateway_a intent and charge, a gateway_b payment, a refund.",
        }),
    })
    .meta({
      id: 'CardTransaction',
      description:
        "The card network's references of this receipt's payment (or refund), as the provider gave them: sealed by " +
        'the service after the charge, beside merchantSignature and not covered by it. Fields the provider did not ' +
        'give are absent.',
    }),
);

export type CardTransaction = z.infer<typeof cardTransactionSchema>;

/** The receipt schema version this service writes (the SDK's); receipts of "1.0" keep opening and validating. */
export { RECEIPT_VERSION } from '@receipt-service/receipt-core';

export const digitalReceiptSchema = lazySchema(() =>
  z
    .strictObject({
      version: shortText(32).min(1),
      receiptId: uuid,
      type: z.enum(['sale', 'refund']).optional().meta({
        description:
          '"refund" for a refund receipt, which names its sale in relatedReceiptId; a sale may say "sale" or nothing.',
      }),
      relatedReceiptId: uuid
        .optional()
        .meta({ description: 'A refund receipt: the receiptId of the sale it refunds.' }),
      merchant: receiptMerchantSchema,
      transaction: receiptTransactionSchema,
      items: z.array(receiptLineItemSchema).max(MAX_ITEMS),
      summary: receiptSummarySchema,
      notes: shortText(4096).nullable().optional(),
      returnPolicy: shortText(4096).nullable().optional(),
      loyaltyInfo: loyaltyInfoSchema.nullable().optional(),
      ...documentAdditions,
      metadata: z.record(z.string().max(128), z.unknown()).optional(),
      createdAt: dateTime,
      merchantSignature: merchantSignatureSchema.optional(),
      receiptCredential: receiptCredentialSchema.optional(),
      cardTransaction: cardTransactionSchema.optional(),
    })
    .superRefine((receipt, ctx) => {
      const refund = receipt.type === 'refund';
      if (refund !== (receipt.relatedReceiptId !== undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: ['relatedReceiptId'],
          message: refund ? 'is required on a refund receipt' : 'belongs on a refund receipt only',
        });
      }
      // The spec's summary has discounts and tips beside tax, so only the lines' sum is checked here. A
      // refund of an amount (no lines named) gives back part of the whole sale: it lists no lines.
      const sum = sumOfLines(receipt.items);
      if (receipt.summary.subtotal !== sum && !(refund && receipt.items.length === 0)) {
        ctx.addIssue({
          code: 'custom',
          path: ['summary', 'subtotal'],
          message: `must equal the sum of the items' totalPrice (${sum})`,
        });
      }
    })
    .meta({
      id: 'DigitalReceipt',
      description:
        "The plaintext receipt. summary.subtotal must equal the sum of the items' totalPrice (a refund of an " +
        'amount lists no items). A refund receipt (`type: "refund"`) names its sale in relatedReceiptId and ' +
        'gives the refunded lines and totals as positive amounts.',
    }),
);

export type DigitalReceipt = z.infer<typeof digitalReceiptSchema>;
export type ReceiptLineItem = z.infer<typeof receiptLineItemSchema>;
