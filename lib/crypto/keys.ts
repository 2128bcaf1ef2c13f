import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { decodeBase64 } from './base64.js';
import { DecryptionError, InvalidPublicKeyError, KeyGenerationError } from './errors.js';
import { LruCache } from '../lru.js';

export const MIN_MODULUS_BITS = 2048;
export const MAX_MODULUS_BITS = 4096;
// A 4096-bit PKCS#8 PEM is about 3.3k characters; the cap also bounds the memory the cache can hold.
const MAX_KEY_INPUT_CHARS = 8192;
const PUBLIC_KEY_CACHE_ENTRIES = 1000;

const PEM_LABEL = /^-----BEGIN ([A-Z0-9 ]+)-----/;
const PUBLIC_PEM_LABELS = new Set(['PUBLIC KEY', 'RSA PUBLIC KEY']);
// Encrypted PEM is refused on purpose: a passphrase prompt has no place in a request path.
const PRIVATE_PEM_LABELS = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY']);

/** RSA-2048, e = 65537; publicKey is base64 DER SPKI, privateKey base64 DER PKCS#8. */
export function generateRsaKeyPair(): Promise<{ publicKey: string; privateKey: string }> {
  // The callback form runs on the libuv thread pool; generateKeyPairSync would stall every request for ~100 ms.
  return new Promise((resolve, reject) => {
    generateKeyPair(
      'rsa',
      {
        modulusLength: 2048,
        publicExponent: 0x10001,
        publicKeyEncoding: { type: 'spki', format: 'der' },
        privateKeyEncoding: { type: 'pkcs8', format: 'der' },
      },
      (error, publicKey, privateKey) => {
        if (error) reject(new KeyGenerationError({ cause: error }));
        else resolve({ publicKey: publicKey.toString('base64'), privateKey: privateKey.toString('base64') });
      },
    );
  });
}

/** Why a key is outside the allow-list (RSA, 2048..4096-bit modulus), or undefined when it is inside. */
export function keyPolicyViolation(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType !== 'rsa') return `key type ${key.asymmetricKeyType ?? key.type} is not RSA`;
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_MODULUS_BITS || bits > MAX_MODULUS_BITS) {
    return `RSA modulus of ${bits} bits is outside ${MIN_MODULUS_BITS}..${MAX_MODULUS_BITS}`;
  }
  return undefined;
}

/** Length in bytes of an RSA key's modulus, which is also the length of every RSA ciphertext under it. */
export function modulusBytes(key: KeyObject): number {
  return Math.ceil((key.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
}

const pemLabel = (input: string): string | undefined => PEM_LABEL.exec(input)?.[1];

const publicKeyCache = new LruCache<string, KeyObject>(PUBLIC_KEY_CACHE_ENTRIES);

function decodePublicKey(input: string): KeyObject | string {
  if (input.length > MAX_KEY_INPUT_CHARS) return 'key is too long';
  const trimmed = input.trim();
  const label = pemLabel(trimmed);
  if (label !== undefined) {
    // createPublicKey would happily derive a public key from a private PEM; a private key sent here is a client bug.
    if (!PUBLIC_PEM_LABELS.has(label)) return `PEM block "${label}" is not a public key`;
    try {
      return createPublicKey(trimmed);
    } catch {
      return 'PEM public key could not be parsed';
    }
  }
  const der = decodeBase64(trimmed);
  if (der === undefined || der.length === 0) return 'key is neither PEM nor canonical base64';
  let key: KeyObject;
  try {
    key = createPublicKey({ key: der, format: 'der', type: 'spki' });
  } catch {
    return 'base64 value is not a DER SubjectPublicKeyInfo';
  }
  // One key, one spelling: trailing bytes or a non-DER encoding would defeat key comparisons elsewhere.
  if (!publicKeyDer(key).equals(der)) return 'SubjectPublicKeyInfo is not in canonical DER form';
  return key;
}

/** Base64 DER SPKI or PEM; RSA 2048..4096 only. Cached: a hot recipient key is parsed once. */
export function parsePublicKey(input: string, field = 'publicKey'): KeyObject {
  const cached = publicKeyCache.get(input);
  if (cached !== undefined) return cached;
  const decoded = decodePublicKey(input);
  if (typeof decoded === 'string') throw new InvalidPublicKeyError(field, decoded);
  const violation = keyPolicyViolation(decoded);
  if (violation !== undefined) throw new InvalidPublicKeyError(field, violation);
  publicKeyCache.set(input, decoded);
  return decoded;
}

/** Parses PKCS#8 or PKCS#1 (DER or PEM) without the allow-list; throws a plain Error saying why. */
export function decodePrivateKey(input: string): KeyObject {
  if (input.length > MAX_KEY_INPUT_CHARS) throw new Error('private key input is too long');
  const trimmed = input.trim();
  const label = pemLabel(trimmed);
  if (label !== undefined) {
    if (!PRIVATE_PEM_LABELS.has(label))
      throw new Error(`PEM block "${label}" is not an unencrypted private key`);
    return createPrivateKey(trimmed);
  }
  const der = decodeBase64(trimmed);
  if (der === undefined || der.length === 0)
    throw new Error('private key is neither PEM nor canonical base64');
  try {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs1' });
  }
}

/**
 * A user's private key, sent with a decrypt request. Never cached: it must not outlive the request.
 * Any problem is a DecryptionError so that a bad key looks exactly like any other failed decryption.
 */
export function parsePrivateKey(input: string): KeyObject {
  let key: KeyObject;
  try {
    key = decodePrivateKey(input);
  } catch {
    throw new DecryptionError('private key unparseable');
  }
  const problem = keyPolicyViolation(key);
  if (problem !== undefined) throw new DecryptionError(`private key not allowed: ${problem}`);
  return key;
}

/** DER SubjectPublicKeyInfo of a public key, or of the public half of a private key. */
export function publicKeyDer(key: KeyObject): Buffer {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return publicKey.export({ type: 'spki', format: 'der' });
}

/** Whether the private key is the other half of the given public key (base64 DER SPKI, or PEM). */
export function matchesPublicKey(privateKey: KeyObject, publicKeyBase64Der: string): boolean {
  let expected: Buffer | undefined;
  try {
    expected = pemLabel(publicKeyBase64Der.trim())
      ? publicKeyDer(parsePublicKey(publicKeyBase64Der))
      : decodeBase64(publicKeyBase64Der);
  } catch {
    return false;
  }
  if (expected === undefined || privateKey.type !== 'private') return false;
  const actual = publicKeyDer(privateKey);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** SHA-256 of a DER SPKI, lowercase hex. */
export function publicKeyFingerprint(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}
