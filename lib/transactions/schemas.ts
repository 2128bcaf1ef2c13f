import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import type { SameType } from '../kernel/route.js';
import { dateTime, uuid } from '../kernel/fields.js';
import { paymentStatuses } from '../kernel/payment-status.js';
import type { TransactionMapping } from './transactions.js';
import { envelopeInputSchema } from '../kernel/envelope-input.js';
import { transactionGatewaySchema } from '../kernel/fields.js';

/** A receipt's paymentStatus as every response shows it: null for a receipt made by receipts/encrypt. */
export const paymentStatusSchema = lazySchema(() =>
  z
    .enum(paymentStatuses)
    .nullable()
    .meta({
      description:
        'The state of the money this receipt records, in clear beside the envelope: pending, succeeded, failed, ' +
        'canceled, partially_refunded or refunded for a sale made by payments/create; a refund receipt carries ' +
        "its refund's pending, succeeded, failed or canceled; null for a receipt made by receipts/encrypt.",
    }),
);

export const transactionMappingResponse = lazySchema(() =>
  z
    .strictObject({
      mappingId: uuid,
      transactionId: uuid,
      receiptId: uuid,
      paymentGateway: z.enum(['gateway_a', 'gateway_b', 'other']).meta({
        description:
          'Always the neutral name: the aliases stripe and square are stored as gateway_a and gateway_b.',
      }),
      gatewayMetadata: z.record(z.string(), z.unknown()).meta({
        description:
          "What the gateway said when the payment was made (its status then, amount, currency); paymentStatus is today's.",
      }),
      createdAt: dateTime,
      paymentStatus: paymentStatusSchema,
    })
    .meta({
      id: 'TransactionMapping',
      description: 'The link between a payment transaction and its encrypted receipt.',
    }),
);

export const mappingTypeMatches: SameType<
  z.output<typeof transactionMappingResponse>,
  TransactionMapping
> = true;

export const storeTransactionBody = lazySchema(() =>
  z
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
    .meta({ id: 'StoreTransactionRequest' }),
);
