import * as z from 'zod';
import { expectedLineTotal, sumOfLines, type LineAmounts } from './amounts.js';

/**
 * The spec's receipt resources as zod schemas, field for field. Unknown fields are refused (a 400
 * naming each, with the closest known name): a misspelt field must never be dropped silently. Money
 * is always an integer in the currency's smallest unit.
 */
export const uuid = z.uuid({ message: 'must be a UUID string' });
export const dateTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' });
export const money = z.number().int('must be an integer amount in the smallest currency unit');
const nonNegativeMoney = money.min(0, 'must not be negative');
const shortText = (max = 256) => z.string().max(max);
/** ISO 4217 codes as the runtime's ICU knows them: a made-up code would otherwise fail at the gateway. */
const isoCurrencies = new Set(Intl.supportedValuesOf('currency'));
export const currency = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD')
  .refine((code) => isoCurrencies.has(code), 'is not an ISO 4217 currency code')
  .meta({ description: 'ISO 4217 currency code, upper case.', examples: ['USD'] });
export const hashedPan = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hash: 64 lowercase hexadecimal characters')
  .meta({
    description:
      'SHA-256 of the card number, computed by the client: 64 lower-case hex characters. ' +
      'The service never sees the PAN.',
    examples: ['a3f1c9e2b4d6f8a0c2e4f6a8b0d2f4a6c8e0a2c4e6f8a0b2d4f6a8c0e2a4c6e8'],
  });

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });
/** ISO 3166-1 alpha-2, as the runtime's ICU knows the regions: `US`, not `USA` or `United States`. */
export const countryCode = z
  .string()
  .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code such as US')
  .refine((code) => {
    // The pattern above reports a badly formed code; ICU throws on one.
    if (!/^[A-Z]{2}$/.test(code)) return true;
    const name = regionNames.of(code);
    return name !== undefined && name !== code && name !== 'Unknown Region';
  }, 'is not an ISO 3166-1 country code')
  .meta({ description: 'ISO 3166-1 alpha-2 country code, upper case.', examples: ['US'] });

/** A logo is shown by issuers' apps: only https, never javascript:, data: or plain http. */
export const httpsUrl = z
  .url({ protocol: /^https$/, message: 'must be an https URL' })
  .max(2048)
  .meta({ description: 'An https URL.' });

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

export const addressSchema = z
  .strictObject({
    street: shortText().optional(),
    city: shortText().optional(),
    state: shortText().optional(),
    postalCode: shortText(32).optional(),
    country: countryCode.optional(),
  })
  .meta({ id: 'Address' });

export const receiptMerchantSchema = z
  .strictObject({
    merchantId: uuid,
    name: shortText().min(1),
    address: addressSchema.optional(),
    taxId: shortText(64).optional(),
    logoUrl: httpsUrl.optional(),
    contactPhone: shortText(32).optional(),
    contactEmail: z.email().max(320).optional(),
  })
  .meta({ id: 'ReceiptMerchant' });

export const cardDetailsSchema = z
  .strictObject({
    last4: z
      .string()
      .regex(/^\d{4}$/, 'must be the last 4 digits')
      .optional(),
    brand: z.enum(cardBrands).optional(),
    expiryMonth: z.number().int().min(1).max(12).optional(),
    expiryYear: z.number().int().min(1900).max(9999).optional(),
  })
  .meta({ id: 'CardDetails' });

export const receiptTransactionSchema = z
  .strictObject({
    transactionId: uuid,
    datetime: dateTime,
    timezone: shortText(64).optional(),
    paymentMethod: z.enum(paymentMethods),
    cardDetails: cardDetailsSchema.optional(),
    authorizationCode: shortText(64).optional(),
  })
  .meta({ id: 'ReceiptTransaction' });

export const lineItemDiscountSchema = z
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
  });

export const lineItemTaxSchema = z
  .strictObject({
    name: shortText().optional(),
    rate: z.number().min(0).max(1).optional(),
    amount: money.optional(),
  })
  .meta({ id: 'LineItemTax', description: 'rate is a decimal fraction: 0.08 means 8%.' });

export const receiptLineItemSchema = z
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
  })
  .superRefine(checkLineTotal)
  .meta({
    id: 'ReceiptLineItem',
    description:
      'totalPrice must equal quantity × unitPrice, rounded half away from zero to the minor unit, less the ' +
      'discounts, whenever every discount gives its amount.',
  });

export const receiptSummarySchema = z
  .strictObject({
    subtotal: money,
    totalTax: nonNegativeMoney,
    totalDiscount: nonNegativeMoney,
    tipAmount: nonNegativeMoney.nullable().optional(),
    total: money,
    currency,
    itemCount: z.number().int().min(0),
  })
  .meta({
    id: 'ReceiptSummary',
    description: 'Amounts are integers in the minor unit of currency (cents for USD).',
  });

export const loyaltyInfoSchema = z
  .strictObject({
    programName: shortText().optional(),
    pointsEarned: z.number().int().optional(),
    pointsBalance: z.number().int().optional(),
    memberNumber: shortText(64).optional(),
  })
  .meta({ id: 'LoyaltyInfo' });

export const digitalReceiptSchema = z
  .strictObject({
    version: shortText(32).min(1),
    receiptId: uuid,
    merchant: receiptMerchantSchema,
    transaction: receiptTransactionSchema,
    items: z.array(receiptLineItemSchema).max(MAX_ITEMS),
    summary: receiptSummarySchema,
    notes: shortText(4096).nullable().optional(),
    returnPolicy: shortText(4096).nullable().optional(),
    loyaltyInfo: loyaltyInfoSchema.nullable().optional(),
    metadata: z.record(z.string().max(128), z.unknown()).optional(),
    createdAt: dateTime,
  })
  .superRefine((receipt, ctx) => {
    // The spec's summary has discounts and tips beside tax, so only the lines' sum is checked here.
    const sum = sumOfLines(receipt.items);
    if (receipt.summary.subtotal !== sum) {
      ctx.addIssue({
        code: 'custom',
        path: ['summary', 'subtotal'],
        message: `must equal the sum of the items' totalPrice (${sum})`,
      });
    }
  })
  .meta({
    id: 'DigitalReceipt',
    description: "The plaintext receipt. summary.subtotal must equal the sum of the items' totalPrice.",
  });

export type DigitalReceipt = z.infer<typeof digitalReceiptSchema>;
export type ReceiptLineItem = z.infer<typeof receiptLineItemSchema>;

/**
 * The envelope as accepted by decrypt and transactions. Its cryptographic fields are only checked for
 * type and size here: anything wrong inside them is a uniform 403 from the crypto module, not a 400
 * that would tell a tamperer which field it broke.
 */
const opaque = (max: number) => z.string().max(max);
export const envelopeInputSchema = z
  .strictObject({
    version: opaque(64),
    receiptId: opaque(128),
    keyId: opaque(256),
    keyBundle: z.strictObject({
      encryptedAesKey: opaque(2048),
      keyId: opaque(256),
      algorithm: opaque(64),
      // Its members are checked by the crypto module, so a tampered epk is the uniform 403 too.
      epk: z.record(z.string().max(16), z.unknown()).optional(),
    }),
    ciphertext: opaque(180_000),
    iv: opaque(64),
    authTag: opaque(64),
    protected: opaque(4096),
    merchantId: opaque(128),
    transactionId: opaque(128),
    createdAt: opaque(64).optional(),
    expiresAt: opaque(64).optional(),
    isEscrowed: z.boolean().optional(),
    escrowKeyId: opaque(256).nullable().optional(),
  })
  .meta({
    id: 'EncryptedReceiptEnvelopeInput',
    description:
      'An envelope as answered by encrypt (either form). Only types and sizes are checked: anything wrong ' +
      'inside the cryptographic fields is the uniform 403 DECRYPTION_ERROR, never a 400 naming the field.',
  });

export type EnvelopeInput = z.infer<typeof envelopeInputSchema>;

const gatewayAliases = { stripe: 'gateway_a', square: 'gateway_b' } as const;

/** `gateway_a` / `gateway_b`, or their aliases `stripe` / `square`; always stored as the neutral name. */
export const paymentGatewayKind = z
  .enum(['gateway_a', 'gateway_b', 'stripe', 'square'])
  .transform(
    (value) =>
      (value in gatewayAliases ? gatewayAliases[value as keyof typeof gatewayAliases] : value) as
        'gateway_a' | 'gateway_b',
  )
  .meta({ description: 'gateway_a or gateway_b; the aliases stripe and square are accepted for them.' });

/** transactions also accepts `other`. */
export const transactionGatewaySchema = z
  .enum(['gateway_a', 'gateway_b', 'other', 'stripe', 'square'])
  .transform(
    (value) =>
      (value in gatewayAliases ? gatewayAliases[value as keyof typeof gatewayAliases] : value) as
        'gateway_a' | 'gateway_b' | 'other',
  )
  .meta({
    description:
      'gateway_a, gateway_b or other; the aliases stripe and square are stored as gateway_a and gateway_b.',
  });
