import * as z from 'zod';
import { envelopeInputSchema, uuid } from '../../lib/receipts/schemas.js';

export const decryptReceiptBody = z
  .object({
    envelope: envelopeInputSchema,
    accessTokenId: uuid,
    privateKey: z.string().min(1).max(16_384),
  })
  .meta({ id: 'DecryptReceiptRequest' });

export type DecryptReceiptBody = z.infer<typeof decryptReceiptBody>;
