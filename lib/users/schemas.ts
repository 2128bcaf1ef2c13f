import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { uuid } from '../kernel/fields.js';

export const rotateUserKeyBody = lazySchema(() =>
  z.strictObject({ keyId: uuid }).meta({ id: 'RotateUserKeyRequest' }),
);
