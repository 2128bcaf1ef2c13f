import * as z from 'zod';
import type { SameType } from '../kernel/route.js';
import { dateTime, uuid } from '../kernel/fields.js';
import type { TransactionMapping } from './transactions.js';

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
