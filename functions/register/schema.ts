import * as z from 'zod';
import { hashedPan, uuid } from '../../lib/receipts/schemas.js';

export const registerBody = z
  .object({
    hashedPan,
    publicKey: z.string().min(1).max(4096),
    keyId: uuid,
  })
  .meta({ id: 'RegisterRequest' });

export type RegisterBody = z.infer<typeof registerBody>;
