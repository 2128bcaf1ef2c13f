import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { paymentGatewayKind } from '../../../lib/kernel/fields.js';
import { fetchedReceiptSchema } from '../../../lib/receipts/envelope-schema.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const getPaymentReceiptRoute = defineRoute({
  name: 'get-payment-receipt',
  method: 'GET',
  path: '/api/v1/payments/{gateway}/{paymentId}/receipt',
  entry: 'functions/payments/get-payment-receipt/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, receipts: 'read', transactions: 'read', merchants: 'read', users: 'read' },
  gateways: true,
  rateGroup: 'payments',
  timeoutSeconds: 29,
  docs: {
    tag: 'payments',
    summary: 'Fetch the envelope of a payment',
    description:
      'Reads the payment from the gateway and follows its receipt pointers to the stored envelope, exactly as ' +
      'payments/decrypt does, then answers it as GET /receipts/{receiptId} would: to the merchant client that ' +
      'encrypted it or to the issuer of its recipient. An unknown payment, a payment without a receipt of this ' +
      'service and a receipt this client may not read are the same 404.',
    details:
      "Merchant or issuer. The same answer, found by the gateway's payment id: the payment is read " +
      'from the gateway and its receipt pointers are followed and checked exactly as ' +
      '`payments/decrypt` does. An unknown payment, a payment without a receipt of this service and a ' +
      'receipt this client may not read are one and the same `404`; an unreachable gateway is `502`. ' +
      '`gateway` takes the aliases too.',
  },
  request: {
    params: lazySchema(() =>
      z.object({ gateway: paymentGatewayKind, paymentId: z.string().min(1).max(255) }),
    ),
  },
  response: { description: 'The envelope and its mapping.', schema: fetchedReceiptSchema, enveloped: true },
  errors: {
    400: { description: 'An unknown gateway, or a gateway not configured here.' },
    404: { description: 'No receipt for this payment that this client may read.' },
    502: { description: 'The gateway could not be reached.', codes: ['GATEWAY_ERROR'] },
  },
});
