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
  },
  request: { params: z.object({ transactionId: uuid }) },
  response: { description: 'The mapping.', schema: transactionMappingResponse, enveloped: true },
  errors: {
    400: { description: 'transactionId is not a UUID.' },
    404: { description: 'No such transaction, or not readable by this client.' },
  },
});
