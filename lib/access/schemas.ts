import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { uuid } from '../kernel/fields.js';

export const grantAccessBody = lazySchema(() =>
  z.strictObject({ userId: uuid, keyId: uuid }).meta({ id: 'GrantAccessRequest' }),
);
