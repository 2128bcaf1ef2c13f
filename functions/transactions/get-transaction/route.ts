import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { transactionMappingResponse } from '../../../lib/transactions/schemas.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const getTransactionRoute = defineRoute({
  name: 'get-transaction',
  method: 'GET',
  path: '/api/v1/transactions/{transactionId}',
  entry: 'functions/transactions/get-transaction/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, transactions: 'read', receipts: 'read', users: 'read' },
  docs: {
    tag: 'transactions',
    summary: 'Read a transaction mapping',
    description:
      "A merchant reads its own mapping of the transactionId; an issuer reads the mapping whose receipt's " +
      'registered recipient is one of its users (the newest, should several merchants use the same ' +
      'transactionId). Anyone else gets the same 404 as for an unknown transactionId.',
    details:
      'Merchant or issuer. The mapping as stored, with the `paymentStatus` of its receipt (`null` when ' +
      'it has none). A merchant reads its own mapping of the `transactionId`. An issuer reads the ' +
      'mapping, whichever merchant client stored it, whose receipt is wrapped for one of its ' +
      'registered users (the newest, should two merchants have used the same `transactionId` for its ' +
      "users). Anyone else gets the same `404` as for an unknown id. The issuer's lookup goes through " +
      'an index that DynamoDB updates a moment after the mapping is written, so a mapping read within ' +
      'about a second of being stored can still be `404` for the issuer.',
  },
  request: { params: z.object({ transactionId: uuid }) },
  response: { description: 'The mapping.', schema: transactionMappingResponse, enveloped: true },
  errors: {
    400: { description: 'transactionId is not a UUID.' },
    404: { description: 'No such transaction, or not readable by this client.' },
  },
});
