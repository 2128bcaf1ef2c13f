import * as z from 'zod';
import { uuid } from '../kernel/fields.js';

export const rotateUserKeyBody = z.strictObject({ keyId: uuid }).meta({ id: 'RotateUserKeyRequest' });
