import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { CardTagKeyring } from './card-tag.js';

/**
 * Data the service keeps for itself and must not keep in clear (what a refund receipt is built
 * from: a sale's lines and merchant), sealed with AES-256-GCM under a key derived from the card-tag
 * key for `purpose`, bound to `context` (the record it belongs to) as additional data. The stored
 * form names the key version: `v<n>.<iv>.<ciphertext>.<tag>`, base64url.
 */
export function sealRecord(
  keyring: CardTagKeyring,
  purpose: string,
  context: string,
  value: unknown,
): string {
  const { version, key } = keyring.derivedKey(purpose);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const sealed = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return [`v${version}`, ...[iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url'))].join(
    '.',
  );
}

/** The value sealed for this purpose and context, or undefined when it was sealed for another or altered. */
export function openRecord<T>(
  keyring: CardTagKeyring,
  purpose: string,
  context: string,
  sealed: string,
): T | undefined {
  const [version, iv, body, authTag, extra] = sealed.split('.');
  const number = /^v([1-9][0-9]{0,5})$/.exec(version ?? '')?.[1];
  if (!number || iv === undefined || body === undefined || authTag === undefined || extra !== undefined)
    return undefined;
  try {
    const { key } = keyring.derivedKey(purpose, Number(number));
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), {
      authTagLength: 16,
    });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(authTag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as T;
  } catch {
    return undefined;
  }
}
