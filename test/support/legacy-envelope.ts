import { constants, createCipheriv, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';
import { keyCommitment, type BoundFields, type SealedEnvelope } from '../../lib/crypto/envelope.js';

/**
 * An envelope as the service sealed them before per-recipient algorithms (docs/ENVELOPE.md, "Legacy
 * envelopes"): alg inside the protected header, RSA-OAEP-256 only, no per-recipient header. Kept
 * apart from lib/crypto so that the stored form stays pinned even as the sealing code moves on.
 */
export function sealLegacyEnvelope(
  plaintext: Uint8Array,
  bound: BoundFields,
  rsaPublicKey: KeyObject,
  keyId: string,
): SealedEnvelope {
  const cek = randomBytes(32);
  const iv = randomBytes(12);
  const protectedHeader = Buffer.from(
    JSON.stringify({
      alg: 'RSA-OAEP-256',
      enc: 'A256GCM',
      version: bound.version,
      receiptId: bound.receiptId,
      merchantId: bound.merchantId,
      transactionId: bound.transactionId,
      keyCommitment: keyCommitment(cek).toString('base64url'),
    }),
  ).toString('base64url');
  const cipher = createCipheriv('aes-256-gcm', cek, iv);
  cipher.setAAD(Buffer.from(protectedHeader, 'latin1'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const wrapped = publicEncrypt(
    { key: rsaPublicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    cek,
  );
  return {
    ...bound,
    keyId,
    keyBundle: { encryptedAesKey: wrapped.toString('base64'), keyId, algorithm: 'RSA-OAEP-256' },
    ciphertext: ciphertext.toString('base64'),
    iv: iv.toString('base64'),
    authTag: cipher.getAuthTag().toString('base64'),
    protected: protectedHeader,
  };
}
