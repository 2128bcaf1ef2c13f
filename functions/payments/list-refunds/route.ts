import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { paymentGatewayKind } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { refundListResponse } from '../../../lib/payments/refunds.js';

export const listRefundsRoute = defineRoute({
  name: 'list-refunds',
  method: 'GET',
  path: '/api/v1/payments/{gateway}/{paymentId}/refunds',
  entry: 'functions/payments/list-refunds/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, payments: 'read' },
  rateGroup: 'payments',
  docs: {
    tag: 'payments',
    summary: "List a payment's refunds",
    description:
      "The payment's refunds, oldest first, whether made through the service or in the provider's dashboard, " +
      'with their status and refund receipt. For the merchant client that made the payment only: anyone else, ' +
      'and any other payment, gets the same 404.',
    details:
      'Merchant, for a payment it made: `{ refunds: [Refund] }`, in the order they were recorded, ' +
      "however they were made (through the service, or in the provider's dashboard: then `refundId` is " +
      "one the service derived from the provider's refund id). Anyone else: `404`.",
  },
  request: { params: z.object({ gateway: paymentGatewayKind, paymentId: z.string().min(1).max(255) }) },
  response: { description: 'The refunds.', schema: refundListResponse, enveloped: true },
  errors: {
    400: { description: 'An unknown gateway.' },
    404: { description: 'No such payment made by this merchant client on this gateway.' },
  },
});
