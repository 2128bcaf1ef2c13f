import * as z from 'zod';
import { paymentGatewayKind, uuid } from '../../lib/receipts/schemas.js';

/** All four fields are required (spec endpoint 5). */
export const decryptPaymentBody = z
  .object({
    paymentId: z.string().min(1).max(255),
    gateway: paymentGatewayKind,
    accessTokenId: uuid,
    privateKey: z.string().min(1).max(16_384),
  })
  .meta({ id: 'DecryptPaymentRequest' });

export type DecryptPaymentBody = z.infer<typeof decryptPaymentBody>;
