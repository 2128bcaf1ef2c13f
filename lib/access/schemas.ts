import * as z from 'zod';
import { uuid } from '../kernel/fields.js';

export const grantAccessBody = z
  .strictObject({ userId: uuid, keyId: uuid })
  .meta({ id: 'GrantAccessRequest' });
