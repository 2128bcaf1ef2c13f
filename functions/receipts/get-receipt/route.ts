import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { fetchedReceiptSchema } from '../../../lib/receipts/envelope-schema.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const getReceiptRoute = defineRoute({
  name: 'get-receipt',
  method: 'GET',
  path: '/api/v1/receipts/{receiptId}',
  entry: 'functions/receipts/get-receipt/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant', 'issuer'],
  tables: { ...platformTables, receipts: 'read', transactions: 'read', users: 'read' },
  docs: {
    tag: 'receipts',
    summary: 'Fetch a stored envelope',
    description:
      'A merchant reads the receipt of this receiptId that it encrypted; an issuer reads the receipt of this ' +
      'receiptId wrapped for one of its users (the newest, should several merchants use the same receiptId). ' +
      'Anyone else gets the same 404 as for an unknown receiptId. The envelope is returned as stored: nothing is ' +
      'decrypted.',
  },
  request: { params: z.object({ receiptId: uuid }) },
  response: { description: 'The envelope and its mapping.', schema: fetchedReceiptSchema, enveloped: true },
  errors: {
    400: { description: 'receiptId is not a UUID.' },
    404: { description: 'No such receipt, or not readable by this client.' },
  },
});
