import * as z from 'zod';
import { envelopeInputSchema, transactionGatewaySchema } from '../../lib/receipts/schemas.js';

export const storeTransactionBody = z
  .object({
    envelope: envelopeInputSchema,
    paymentGateway: transactionGatewaySchema,
    metadata: z
      .record(z.string().max(128), z.unknown())
      .refine((metadata) => Object.keys(metadata).length <= 50, 'at most 50 metadata keys')
      .refine(
        (metadata) => JSON.stringify(metadata).length <= 8_192,
        'metadata must be at most 8 KiB as JSON',
      )
      .optional(),
  })
  .meta({ id: 'StoreTransactionRequest' });

export type StoreTransactionBody = z.infer<typeof storeTransactionBody>;
