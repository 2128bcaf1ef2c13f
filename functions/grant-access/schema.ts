import * as z from 'zod';
import { uuid } from '../../lib/receipts/schemas.js';

export const grantAccessBody = z.object({ userId: uuid, keyId: uuid }).meta({ id: 'GrantAccessRequest' });

export type GrantAccessBody = z.infer<typeof grantAccessBody>;
