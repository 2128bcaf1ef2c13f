import * as z from 'zod';
import type { SameType } from '../kernel/route.js';
import { dateTime, uuid } from '../kernel/fields.js';
import type { TransactionMapping } from './transactions.js';
import { envelopeInputSchema } from '../kernel/envelope-input.js';
import { transactionGatewaySchema } from '../kernel/fields.js';

export const transactionMappingResponse = z
  .strictObject({
    mappingId: uuid,
    transactionId: uuid,
    receiptId: uuid,
    paymentGateway: z.enum(['gateway_a', 'gateway_b', 'other']).meta({
      description:
        'Always the neutral name: the aliases stripe and square are stored as gateway_a and gateway_b.',
    }),
    gatewayMetadata: z.record(z.string(), z.unknown()),
    createdAt: dateTime,
  })
  .meta({
    id: 'TransactionMapping',
    description: 'The link between a payment transaction and its encrypted receipt.',
  });

export const mappingTypeMatches: SameType<
  z.output<typeof transactionMappingResponse>,
  TransactionMapping
> = true;

export const storeTransactionBody = z
  .strictObject({
    envelope: envelopeInputSchema,
    paymentGateway: transactionGatewaySchema,
    // Free-form by design: the merchant's own keys, bounded in number and size only.
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
