import * as z from 'zod';
import {
  RECEIPT_CREDENTIAL_DETAILS,
  RECEIPT_CREDENTIAL_ERROR,
} from '../../../lib/receipts/credential-field.js';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { createPaymentBody, idempotencyKeyHeader } from '../../../lib/payments/schemas.js';
import { receiptSignatureHeader } from '../../../lib/merchants/schemas.js';
import { paymentGatewayKind } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { PaymentResult } from '../../../lib/payments/create.js';
import { uuid } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';

export const paymentResultResponse = lazySchema(() =>
  z
    .strictObject({
      paymentId: z
        .string()
        .meta({ description: "The gateway's payment identifier; send it to payments/decrypt." }),
      clientSecret: z.string().nullable().meta({
        description:
          'gateway_a payment-intent client secret for confirming on the client; null for gateway_b.',
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
    }),
);

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
    details:
      'Merchant. The receipt fields (docs/API.md), plus `amount` and `cardNonce`, and optionally an ' +
      '`Idempotency-Key` header. In one call the service checks the amounts, encrypts and stores the ' +
      'receipt (exactly as the flattened encrypt), creates the payment with pointers to the receipt ' +
      '(`receiptId`, `transactionId`, `merchantId`) in its metadata, and maps the transaction to it. ' +
      'Response: `{ paymentId, clientSecret, orderId, gateway, receiptMetadata: { receiptId, ' +
      'transactionId, merchantId, isEscrowed } }`.\n\n' +
      '- **`gateway_a` (Stripe).** `amount` is required and must equal `totalAmount`. The service ' +
      "creates a PaymentIntent for it, with the pointers in the intent's metadata, and does not " +
      "confirm it: the intent's status is `requires_payment_method`, `paymentId` is its id (`pi_…`), " +
      "and `clientSecret` is what the point of sale gives Stripe's client side (Stripe.js " +
      "`confirmPayment`, or Stripe's mobile SDKs) to collect the card and confirm the intent with " +
      "Stripe directly; the service never sees card data. The intent uses the Stripe account's default " +
      'payment methods (a Stripe Terminal reader would need `card_present`, which the service does not ' +
      'request today). `orderId` is `null`. Treat `clientSecret` like the payment itself: hand it to ' +
      'the checkout that confirms it and nowhere else.\n- **`gateway_b` (Square).** The charge is the ' +
      'items less allowances plus charges and tax, which must equal `totalAmount` (`amount` is optional; ' +
      'if sent it must agree). The service creates an order with one line per receipt item, each ' +
      'DigitalReceipt 1.2 allowance as a fixed order-scoped discount, each charge and the tax as fixed service ' +
      "charges, the pointers in the order's metadata, then a payment for it with `cardNonce` (from " +
      "Square's Web Payments or In-App Payments SDK), completed at once. `cardNonce` is required " +
      '(`400` naming it when missing) except against the local gateway sandbox, which charges its test ' +
      "nonce when none is sent. `orderId` is the order's id; `clientSecret` is `null`. Square metadata " +
      'limits (10 entries, 255 characters) and id lengths are checked before the call.\n\n' +
      'The receipt is attached as soon as the payment object exists: `payments/decrypt` opens it ' +
      "whatever the payment's status, including a Stripe intent not yet confirmed (or never " +
      'confirmed). Its `paymentStatus` says where the payment stands: `pending` for a gateway_a intent ' +
      "until the gateway's event says it was paid (`succeeded`), declined (`failed`) or canceled; " +
      '`succeeded` for gateway_b at once; `failed` for a card declined at creation (`402`, the receipt ' +
      'stays stored). The receipt is never deleted because its payment failed. See The payment ' +
      'lifecycle (docs/API.md).\n\n' +
      'Errors: `400` for bad fields, amounts that do not add up, a gateway not configured on this ' +
      'deployment, or payment details the gateway refused (an unknown card nonce: `details.fields` ' +
      'names `cardNonce`); `402 PAYMENT_DECLINED` when the card is declined; `403 forbidden` when the ' +
      "`merchantId` is another merchant client's (checked before the gateway is called: nothing is " +
      'charged); `409` (see Idempotency (docs/API.md)); `502 GATEWAY_ERROR` when the gateway is ' +
      'unreachable after its retries.\n\n' +
      RECEIPT_CREDENTIAL_DETAILS,
  },
  request: {
    params: lazySchema(() =>
      z.object({
        gateway: paymentGatewayKind.meta({
          description: 'gateway_a or gateway_b; the aliases stripe and square are accepted for them.',
        }),
      }),
    ),
    headers: lazySchema(() =>
      z.object({
        'Idempotency-Key': idempotencyKeyHeader.optional(),
        'Receipt-Signature': receiptSignatureHeader.optional(),
      }),
    ),
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
        'is charged or stored.' +
        RECEIPT_CREDENTIAL_ERROR,
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
