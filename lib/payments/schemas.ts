import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { checkAmounts, flattenedReceiptFields } from '../receipts/flattened.js';
import { money } from '../kernel/fields.js';
import { paymentGatewayKind, uuid } from '../kernel/fields.js';

/** The flattened receipt fields plus the payment's own: amount (gateway_a) and cardNonce (gateway_b). */
export const createPaymentBody = lazySchema(() =>
  z
    .strictObject({
      ...flattenedReceiptFields,
      amount: money.min(1).optional(),
      cardNonce: z.string().min(1).max(192).optional(),
      paymentMethodId: z
        .string()
        .regex(/^pm_[A-Za-z0-9_]{1,255}$/, 'must be a gateway_a payment method id (pm_…)')
        .optional()
        .meta({
          description:
            'gateway_a only: a payment method to confirm the intent with at once (a card on file, a terminal). The ' +
            "payment is then charged at create, and the receipt carries the charge's network references " +
            '(cardTransaction). Without it the intent awaits confirmation with clientSecret and the receipt has none.',
        }),
    })
    .superRefine(checkAmounts)
    .meta({
      id: 'CreatePaymentRequest',
      description:
        'The flattened receipt fields plus amount (required for gateway_a, must equal totalAmount), ' +
        'cardNonce (gateway_b) and paymentMethodId (gateway_a). Amounts must add up as in the flattened encrypt form.',
    }),
);

export type CreatePaymentBody = z.infer<typeof createPaymentBody>;

/** An optional client-chosen key; without it the receiptId is the idempotency key. */
export const idempotencyKeyHeader = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'must be 1 to 255 printable ASCII characters')
    .meta({
      description:
        'Optional: 1 to 255 printable ASCII characters. Without it the receiptId is the idempotency key.',
    }),
);

/** All four fields are required (spec endpoint 5). */
export const decryptPaymentBody = lazySchema(() =>
  z
    .strictObject({
      paymentId: z.string().min(1).max(255),
      gateway: paymentGatewayKind,
      accessTokenId: uuid,
      privateKey: z.string().min(1).max(16_384),
    })
    .meta({ id: 'DecryptPaymentRequest' }),
);
