import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { createPaymentBody, idempotencyKeyHeader } from '../../../lib/payments/schemas.js';
import { receiptSignatureHeader } from '../../../lib/merchants/schemas.js';
import { paymentGatewayKind } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { PaymentResult } from '../../../lib/payments/create.js';
import { uuid } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';

export const paymentResultResponse = z
  .strictObject({
    paymentId: z
      .string()
      .meta({ description: "The gateway's payment identifier; send it to payments/decrypt." }),
    clientSecret: z.string().nullable().meta({
      description: 'gateway_a payment-intent client secret for confirming on the client; null for gateway_b.',
    }),
    orderId: z.string().nullable().meta({ description: 'gateway_b order id; null for gateway_a.' }),
    gateway: z
      .enum(['gateway_a', 'gateway_b'])
      .meta({ description: 'The gateway kind; send it to payments/decrypt.' }),
    receiptMetadata: z
      .strictObject({ receiptId: uuid, transactionId: uuid, merchantId: uuid, isEscrowed: z.boolean() })
      .meta({
        description: 'The pointers attached to the payment; the receipt itself stays with the service.',
      }),
    livemode: z.boolean().meta({
      description:
        "True when real money moved: the gateway's own answer (gateway_a), or the mode of the service's credentials (gateway_b). " +
        'Always false outside production, which refuses live credentials.',
    }),
  })
  .meta({
    id: 'PaymentResult',
    description: 'A payment created on the gateway with its encrypted receipt attached.',
  });

export const responseTypeMatches: SameType<z.output<typeof paymentResultResponse>, PaymentResult> = true;

export const createPaymentRoute = defineRoute({
  name: 'create-payment',
  method: 'POST',
  path: '/api/v1/payments/{gateway}/create',
  entry: 'functions/payments/create-payment/handler.ts',
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
    evidence: 'write',
    merchantKeys: 'read',
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
      'or the same `Idempotency-Key`, never charges twice and returns the first result for 24 hours. With ' +
      '`Receipt-Signature` the merchant signs the receipt (docs/ENVELOPE.md): the receipt is then timed by ' +
      'transactionDate, which the request must give, and sealed with the signature inside it.',
  },
  request: {
    params: z.object({
      gateway: paymentGatewayKind.meta({
        description: 'gateway_a or gateway_b; the aliases stripe and square are accepted for them.',
      }),
    }),
    headers: z.object({
      'Idempotency-Key': idempotencyKeyHeader.optional(),
      'Receipt-Signature': receiptSignatureHeader.optional(),
    }),
    body: { description: 'The flattened receipt fields and the payment fields.', schema: createPaymentBody },
  },
  response: { description: 'The payment.', schema: paymentResultResponse, enveloped: true },
  errors: {
    400: {
      description:
        'Invalid body, path or Idempotency-Key; amounts that do not add up; a gateway not configured here. ' +
        'invalid_signature: the Receipt-Signature does not stand (its form, alg, kid, a revoked key, or a ' +
        'signature over anything but the receipt the request makes, each named in the message and ' +
        '`details.reason`), or this merchant client requires signatures and the request has none; nothing ' +
        'is charged or stored.',
      codes: ['invalid_signature'],
    },
    402: { description: 'The gateway declined the payment.', codes: ['PAYMENT_DECLINED'] },
    403: {
      description:
        "The API key's roles do not include this operation, or the merchantId belongs to another merchant " +
        'client; nothing is charged.',
    },
    409: {
      description:
        'One payment per receipt per merchant: the receiptId already has a payment (named in ' +
        '`details.paymentId` and `details.paymentGateway`) and this request is not a repeat of the one ' +
        'that made it (another body, gateway or Idempotency-Key); an Idempotency-Key that was sent was ' +
        'used with a different body; the same request is still running (`details.retryable: true`); or ' +
        'the transactionId is taken by another receipt.',
      codes: ['CONFLICT'],
    },
    500: { description: 'Encryption failed.', codes: ['ENCRYPTION_ERROR'] },
    502: {
      description: 'The gateway could not be reached or did not complete the request.',
      codes: ['GATEWAY_ERROR'],
    },
  },
});
