import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { paymentGatewayKind } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { createRefundBody, refundResponse } from '../../../lib/payments/refunds.js';
import { receiptSignatureHeader } from '../../../lib/merchants/schemas.js';

export const createRefundRoute = defineRoute({
  name: 'create-refund',
  method: 'POST',
  path: '/api/v1/payments/{gateway}/{paymentId}/refunds',
  entry: 'functions/payments/create-refund/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: {
    ...platformTables,
    payments: 'readWrite',
    receipts: 'readWrite',
    users: 'read',
    merchantKeys: 'read',
  },
  escrow: 'wrap',
  cardTags: true,
  gateways: true,
  rateGroup: 'payments',
  timeoutSeconds: 29,
  docs: {
    tag: 'payments',
    summary: 'Refund a payment',
    description:
      'A full, partial or itemised refund of a payment this merchant client made with payments/create (any other ' +
      'client, and any other payment, gets the same 404). `refundId` is the idempotency key: the same refundId ' +
      'again returns the first refund, and with another body is 409. An itemised refund names sale lines and ' +
      'quantities; its amount is derived from them and their share of the tax (docs/API.md, "Refunds"), and an ' +
      '`amount` sent with them must agree. More than what is left of the payment (a payment not yet paid has ' +
      'nothing to refund) is 400 REFUND_EXCEEDS_PAYMENT, before the gateway is called. A refund the gateway ' +
      'refuses or cannot be reached for leaves nothing stored. Every refund makes a refund receipt, sealed for ' +
      "the sale's recipient (or escrowed with the sale, and released by the claim that releases it); the sale's " +
      'paymentStatus becomes partially_refunded or refunded as refunds succeed. With `Receipt-Signature` (and ' +
      '`refundDate`) the merchant signs the refund receipt the request makes (the SDK: toRefundReceipt, then ' +
      'signReceipt; docs/ENVELOPE.md), and it is sealed with the signature inside.',
    details:
      'Merchant, for a payment it made with `payments/{gateway}/create`. `{ refundId, amount?, ' +
      'reason?, items?: [{ lineItemId, quantity }] }` → `201 { refundId, paymentId, gateway, amount, ' +
      'currency, status, receiptId, createdAt }`.\n\n' +
      '- `refundId` (a UUID of yours) is the idempotency key, per payment: the same `refundId` again ' +
      'returns the first refund (`201`, nothing is refunded twice); with another body it is `409 ' +
      "CONFLICT`.\n- Give `amount` (minor units), or `items` naming the sale's lines and how many of " +
      'each, or both (they must agree, else `400` naming `amount` with the amount the items come to). ' +
      'The amount of `items` is derived from the lines and their share of the tax (the amount rule ' +
      '(docs/API.md)). A `lineItemId` that is not a line of the sale, named twice, or asked for beyond ' +
      'what is left of its line is `400` naming `items.<n>`.\n- More than what is left of the payment ' +
      '(its amount less every refund recorded or under way) is `400 REFUND_EXCEEDS_PAYMENT` with ' +
      '`details.refundable`, before the gateway is asked. A payment that was not paid (`pending`, ' +
      '`failed`, `canceled`) has nothing to refund.\n- The gateway refusing the refund is `402 ' +
      'PAYMENT_DECLINED`, the gateway unreachable `502 GATEWAY_ERROR`; either way nothing is stored ' +
      "and nothing of the payment is held back.\n- `status` is the refund's: gateway_a (Stripe) refunds " +
      'a card at once (`succeeded`); gateway_b (Square) answers `pending` and settles a moment later ' +
      "(its `refund.updated` event): the refund receipt's `paymentStatus` follows.\n- `receiptId` is " +
      "the refund receipt, sealed for the sale's recipient: fetch it with `GET /receipts/{receiptId}` " +
      '(refund receipts (docs/API.md)).\n- Any other client, and any payment this client did not make, ' +
      'is the same `404 not_found`; an issuer key is `403`. Spends the `payments` rate budget.',
  },
  request: {
    params: lazySchema(() =>
      z.object({ gateway: paymentGatewayKind, paymentId: z.string().min(1).max(255) }),
    ),
    headers: lazySchema(() => z.object({ 'Receipt-Signature': receiptSignatureHeader.optional() })),
    body: { description: 'How much to give back: an amount, sale lines, or both.', schema: createRefundBody },
  },
  response: { description: 'The refund.', schema: refundResponse, enveloped: true, status: 201 },
  errors: {
    400: {
      description:
        'Invalid body or path; items that are not lines of the sale or ask for more than is left of a line; an ' +
        'amount that does not match the items; more than the refundable remainder (REFUND_EXCEEDS_PAYMENT, with ' +
        '`details.refundable`). invalid_signature: the Receipt-Signature does not stand over the refund ' +
        'receipt this request makes (or is missing where the merchant requires signatures, or refundDate is); ' +
        'nothing is stored and the gateway is not called.',
      codes: ['REFUND_EXCEEDS_PAYMENT', 'invalid_signature'],
    },
    402: { description: 'The gateway declined the refund; nothing is stored.', codes: ['PAYMENT_DECLINED'] },
    404: { description: 'No such payment made by this merchant client on this gateway.' },
    409: {
      description:
        'This refundId was used with a different refund, or the payment is changing under many requests at ' +
        'once (`details.retryable: true`).',
      codes: ['CONFLICT'],
    },
    502: {
      description: 'The gateway could not be reached or did not complete the refund; nothing is stored.',
      codes: ['GATEWAY_ERROR'],
    },
  },
});
