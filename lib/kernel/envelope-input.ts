import * as z from 'zod';
import { lazySchema } from './lazy-schema.js';

/**
 * The envelope as accepted by decrypt and transactions. Its cryptographic fields are only checked for
 * type and size here: anything wrong inside them is a uniform 403 from the crypto module, not a 400
 * that would tell a tamperer which field it broke.
 */
const opaque = (max: number) => z.string().max(max);
export const envelopeInputSchema = lazySchema(() =>
  z
    .strictObject({
      version: opaque(64),
      receiptId: opaque(128),
      keyId: opaque(256),
      keyBundle: z.strictObject({
        encryptedAesKey: opaque(2048),
        keyId: opaque(256),
        algorithm: opaque(64),
        // Its members are checked by the crypto module, so a tampered epk is the uniform 403 too.
        epk: z.record(z.string().max(16), z.unknown()).optional(),
      }),
      ciphertext: opaque(180_000),
      iv: opaque(64),
      authTag: opaque(64),
      protected: opaque(4096),
      merchantId: opaque(128),
      transactionId: opaque(128),
      createdAt: opaque(64).optional(),
      expiresAt: opaque(64).optional(),
      isEscrowed: z.boolean().optional(),
      escrowKeyId: opaque(256).nullable().optional(),
    })
    .meta({
      id: 'EncryptedReceiptEnvelopeInput',
      description:
        'An envelope as answered by encrypt (either form). Only types and sizes are checked: anything wrong ' +
        'inside the cryptographic fields is the uniform 403 DECRYPTION_ERROR, never a 400 naming the field.',
    }),
);

export type EnvelopeInput = z.infer<typeof envelopeInputSchema>;
