import { defineRoute } from '../../../lib/kernel/route.js';
import { transactionMappingResponse } from '../../../lib/transactions/schemas.js';

import { platformTables } from '../../../lib/kernel/route-tables.js';
import { storeTransactionBody } from '../../../lib/transactions/schemas.js';

export const storeTransactionRoute = defineRoute({
  name: 'store-transaction',
  method: 'POST',
  path: '/api/v1/transactions',
  entry: 'functions/transactions/store-transaction/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, transactions: 'readWrite', receipts: 'readWrite', merchants: 'read' },
  docs: {
    tag: 'transactions',
    summary: 'Map a transaction to its encrypted receipt',
    description:
      'The envelope must be one this merchant encrypted, unchanged. The first mapping of a transactionId by this ' +
      "merchant client wins: storing the same envelope again returns it. Other clients' transactionIds are " +
      'separate and never conflict.',
    details:
      'Merchant. `{ envelope, paymentGateway, metadata? }` → `{ mappingId, transactionId, receiptId, ' +
      'paymentGateway, gatewayMetadata, createdAt }`. `paymentGateway` is `gateway_a`, `gateway_b`, ' +
      '`other` (or `stripe`/`square`); `metadata` is free-form and is returned as `gatewayMetadata`. ' +
      'The envelope must be one this merchant encrypted, unchanged (`404` if no such receipt was ' +
      'encrypted by it, `409` if it differs from the stored one, `403 forbidden` if its `merchantId` ' +
      "is another merchant client's). The first mapping of a `transactionId` by this merchant client " +
      'wins: storing the same again returns it; mapping it to another of its receipts is `409`.',
  },
  request: {
    body: { description: 'The envelope, the gateway and optional metadata.', schema: storeTransactionBody },
  },
  response: { description: 'The mapping.', schema: transactionMappingResponse, enveloped: true },
  errors: {
    403: {
      description:
        "The API key's roles do not include this operation, or the envelope's merchantId belongs to another " +
        'merchant client.',
    },
    404: { description: 'No receipt with this receiptId was encrypted by this merchant.' },
    409: {
      description:
        'The envelope differs from the one stored for its receiptId, or the transactionId is mapped to another receipt.',
      codes: ['CONFLICT'],
    },
  },
});
