import * as z from 'zod';
import { defineRoute } from '../contract/route.js';
import { paymentResultResponse } from '../openapi/responses.js';
import { checkAmounts, flattenedReceiptFields } from '../receipts/flattened.js';
import { money, paymentGatewayKind } from '../receipts/schemas.js';
import { platformTables } from './platform.js';

/** The flattened receipt fields plus the payment's own: amount (gateway_a) and cardNonce (gateway_b). */
export const createPaymentBody = z
  .strictObject({
    ...flattenedReceiptFields,
    amount: money.min(1).optional(),
    cardNonce: z.string().min(1).max(192).optional(),
  })
  .superRefine(checkAmounts)
  .meta({
    id: 'CreatePaymentRequest',
    description:
      'The flattened receipt fields plus amount (required for gateway_a, must equal totalAmount) and ' +
      'cardNonce (gateway_b). Amounts must add up as in the flattened encrypt form.',
  });

export type CreatePaymentBody = z.infer<typeof createPaymentBody>;

/** An optional client-chosen key; without it the receiptId is the idempotency key. */
export const idempotencyKeyHeader = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be 1 to 255 printable ASCII characters')
  .meta({
    description:
      'Optional: 1 to 255 printable ASCII characters. Without it the receiptId is the idempotency key.',
  });

export const createPaymentRoute = defineRoute({
  name: 'create-payment',
  method: 'POST',
  path: '/api/v1/payments/{gateway}/create',
  entry: 'functions/create-payment/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: {
    ...platformTables,
    users: 'read',
    keyPairs: 'read',
    receipts: 'readWrite',
    transactions: 'readWrite',
    merchants: 'readWrite',
    idempotency: 'readWrite',
  },
  escrow: 'wrap',
  cardTags: true,
  gateways: true,
  rateGroup: 'payments',
  timeoutSeconds: 29,
  docs: {
    tag: 'payments',
    summary: 'Create a payment with an encrypted receipt',
    description:
      'Step 3. Encrypts the receipt (as the flattened encrypt form), creates the payment on the gateway with ' +
      'pointers to the receipt in its metadata, and maps the transaction. For gateway_a `amount` is required and ' +
      'must equal totalAmount; for gateway_b the charge is the items plus tax. Idempotent: the same receiptId, ' +
      'or the same `Idempotency-Key`, never charges twice and returns the first result for 24 hours.',
  },
  request: {
    params: z.object({
      gateway: paymentGatewayKind.meta({
        description: 'gateway_a or gateway_b; the aliases stripe and square are accepted for them.',
      }),
    }),
    headers: z.object({ 'Idempotency-Key': idempotencyKeyHeader.optional() }),
    body: { description: 'The flattened receipt fields and the payment fields.', schema: createPaymentBody },
  },
  response: { description: 'The payment.', schema: paymentResultResponse, enveloped: true },
  errors: {
    400: {
      description:
        'Invalid body, path or Idempotency-Key; amounts that do not add up; a gateway not configured here.',
    },
    402: { description: 'The gateway declined the payment.', codes: ['PAYMENT_DECLINED'] },
    403: {
      description:
        "The API key's roles do not include this operation, or the merchantId belongs to another merchant " +
        'client; nothing is charged.',
    },
    409: {
      description:
        'The idempotency key was used with a different body, the same request is still running ' +
        '(`details.retryable: true`), or the receiptId or transactionId is taken by different content.',
      codes: ['CONFLICT'],
    },
    500: { description: 'Encryption failed.', codes: ['ENCRYPTION_ERROR'] },
    502: {
      description: 'The gateway could not be reached or did not complete the request.',
      codes: ['GATEWAY_ERROR'],
    },
  },
});
