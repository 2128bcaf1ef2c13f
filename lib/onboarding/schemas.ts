import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { hashedPan, uuid } from '../kernel/fields.js';

export const registerBody = lazySchema(() =>
  z
    .strictObject({
      hashedPan,
      publicKey: z.string().min(1).max(4096),
      keyId: uuid,
    })
    .meta({ id: 'RegisterRequest' }),
);

// A public JWK: the crypto module decides what is acceptable, so the body only bounds its size here.
const publicJwk = lazySchema(() =>
  z.record(z.string().max(16), z.union([z.string().max(1024), z.array(z.string().max(4096)).max(8)])).meta({
    id: 'PublicJwk',
    description:
      'A public JWK: {kty:"EC", crv:"P-256", x, y} or {kty:"RSA", n, e}. Private members (d, p, q, …) are refused.',
  }),
);

export const importKeyBody = lazySchema(() =>
  z
    .strictObject({
      publicKey: z.union([
        z.string().min(1).max(4096).meta({ description: 'Base64 DER SubjectPublicKeyInfo (or PEM).' }),
        publicJwk,
      ]),
    })
    .meta({ id: 'ImportKeyRequest' }),
);
