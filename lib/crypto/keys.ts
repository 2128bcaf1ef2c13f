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
import { LruCache } from '../kernel/lru.js';

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

/** How a content key is wrapped for a recipient: the JWE `alg`, decided by the recipient key's type. */
export type KeyWrapAlgorithm = 'RSA-OAEP-256' | 'ECDH-ES+A256KW';
export const KEY_WRAP_ALGORITHMS: readonly KeyWrapAlgorithm[] = ['RSA-OAEP-256', 'ECDH-ES+A256KW'];

/** The only RSA public exponent accepted: what every library generates, and what OAEP is analysed with. */
export const RSA_PUBLIC_EXPONENT = 65537n;

/** An exponent as a message can show it: a huge one (e >= n, say) by its size alone. */
const describeExponent = (exponent: bigint): string =>
  exponent < 1n << 64n ? String(exponent) : `a ${exponent.toString(2).length}-bit number`;

/** What the policies read of a key: its kind, and the modulus size or curve. */
interface KeyShape {
  type: string;
  kind: string | undefined;
  modulusBits: number;
  curve: string | undefined;
}

/**
 * A KeyObject never changes, and each of its `asymmetricKeyType` / `asymmetricKeyDetails` reads is a
 * call into node's C++ that builds a fresh object: a seal or open asks several times (the policy, the
 * algorithm, the unwrap's own check), which cost a P-256 open a fifth of its time. Read once per key.
 */
const shapes = new WeakMap<KeyObject, KeyShape>();
function shapeOf(key: KeyObject): KeyShape {
  let shape = shapes.get(key);
  if (shape === undefined) {
    const details = key.asymmetricKeyDetails;
    shape = {
      type: key.type,
      kind: key.asymmetricKeyType,
      modulusBits: details?.modulusLength ?? 0,
      curve: details?.namedCurve,
    };
    shapes.set(key, shape);
  }
  return shape;
}

/**
 * Why a key is outside the RSA allow-list, or undefined when it is inside: a 2048..4096-bit modulus,
 * and for a public key an odd modulus and e = 65537. Other exponents are refused outright: e = 1
 * leaves the content key in the clear, an even e or an even modulus is no RSA permutation, and OpenSSL
 * refuses to encrypt to a 4096-bit modulus with e > 2^64 (or e >= n), which a recipient key must never
 * let anyone do to a merchant's request. This is the escrow key's policy as well, which stays RSA;
 * recipients go through recipientKeyViolation.
 */
export function keyPolicyViolation(key: KeyObject): string | undefined {
  const shape = shapeOf(key);
  if (shape.kind !== 'rsa') return `key type ${shape.kind ?? shape.type} is not RSA`;
  const bits = shape.modulusBits;
  if (bits < MIN_MODULUS_BITS || bits > MAX_MODULUS_BITS) {
    return `RSA modulus of ${bits} bits is outside ${MIN_MODULUS_BITS}..${MAX_MODULUS_BITS}`;
  }
  // A private key is the caller's own, checked against a public key that passed this already.
  if (key.type !== 'public') return undefined;
  const exponent = key.asymmetricKeyDetails?.publicExponent ?? 0n;
  if (exponent !== RSA_PUBLIC_EXPONENT)
    return `RSA public exponent must be ${RSA_PUBLIC_EXPONENT}, not ${describeExponent(exponent)}`;
  const modulus = Buffer.from(key.export({ format: 'jwk' }).n ?? '', 'base64url');
  if (modulus.length === 0 || (modulus[modulus.length - 1]! & 1) === 0) return 'RSA modulus is even';
  return undefined;
}

/** Why a key is not a P-256 key, or undefined when it is one. */
export function ecKeyPolicyViolation(key: KeyObject): string | undefined {
  const shape = shapeOf(key);
  if (shape.kind !== 'ec') return `key type ${shape.kind ?? shape.type} is not EC`;
  const curve = shape.curve;
  // Only P-256: the curve iOS's Secure Enclave and every WebCrypto implementation hold.
  if (curve !== 'prime256v1') return `EC curve ${curve ?? 'with explicit parameters'} is not P-256`;
  // OpenSSL refuses points off the curve and the identity when it reads a key; a public key must
  // still have both coordinates (the identity has none).
  if (key.type === 'public') {
    const { x, y } = key.export({ format: 'jwk' });
    if (!x || !y) return 'EC public key is the point at infinity';
  }
  return undefined;
}

/**
 * The one form of a key the service stores and compares: a P-256 key as its uncompressed point
 * (a compressed SPKI reads as the same key, but exports compressed again, and would then never equal
 * the uncompressed form the same key has everywhere else); any other key as it is.
 */
function canonicalKey(key: KeyObject): KeyObject {
  if (key.asymmetricKeyType !== 'ec') return key;
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const { x, y } = publicKey.export({ format: 'jwk' });
  return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x, y }, format: 'jwk' });
}

/**
 * Each seal asks this of its recipient's key, and the answer never changes for a KeyObject (they are
 * immutable): the RSA and EC checks export the key as a JWK, which cost an RSA seal about half its time.
 */
const recipientVerdicts = new WeakMap<KeyObject, { violation: string | undefined }>();

/** Why a key cannot be a receipt recipient's (RSA 2048..4096 or EC P-256), or undefined when it can. */
export function recipientKeyViolation(key: KeyObject): string | undefined {
  let verdict = recipientVerdicts.get(key);
  if (verdict === undefined) {
    verdict = { violation: judgeRecipientKey(key) };
    recipientVerdicts.set(key, verdict);
  }
  return verdict.violation;
}

function judgeRecipientKey(key: KeyObject): string | undefined {
  const shape = shapeOf(key);
  if (shape.kind === 'rsa') return keyPolicyViolation(key);
  if (shape.kind === 'ec') return ecKeyPolicyViolation(key);
  return `key type ${shape.kind ?? shape.type} is neither RSA nor EC P-256`;
}

/** The key-management algorithm a recipient key is used with; the key must be inside the allow-list. */
export function keyWrapAlgorithmOf(key: KeyObject): KeyWrapAlgorithm {
  return shapeOf(key).kind === 'ec' ? 'ECDH-ES+A256KW' : 'RSA-OAEP-256';
}

/** Length in bytes of an RSA key's modulus, which is also the length of every RSA ciphertext under it. */
export function modulusBytes(key: KeyObject): number {
  return Math.ceil(shapeOf(key).modulusBits / 8);
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
  // A compressed P-256 point is DER too; it is read, and stored, as the uncompressed point it names.
  if (!key.export({ type: 'spki', format: 'der' }).equals(der))
    return 'SubjectPublicKeyInfo is not in canonical DER form';
  return key;
}

/**
 * Base64 DER SPKI or PEM; RSA 2048..4096 or EC P-256. Cached: a hot recipient key is parsed once.
 * Stored users' keys are read through this too, so the key type in the SPKI is what decides the
 * algorithm (keyWrapAlgorithmOf): records written before P-256 existed need no new attribute.
 */
export function parsePublicKey(input: string, field = 'publicKey'): KeyObject {
  const cached = publicKeyCache.get(input);
  if (cached !== undefined) return cached;
  const decoded = decodePublicKey(input);
  if (typeof decoded === 'string') throw new InvalidPublicKeyError(field, decoded);
  const violation = recipientKeyViolation(decoded);
  if (violation !== undefined) throw new InvalidPublicKeyError(field, violation);
  const key = canonicalKey(decoded);
  publicKeyCache.set(input, key);
  return key;
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
  const problem = recipientKeyViolation(key);
  if (problem !== undefined) throw new DecryptionError(`private key not allowed: ${problem}`);
  return key;
}

// Members that only a private or a symmetric JWK has: a device key's private half never leaves it.
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const JWK_MEMBER_CHARS = 1024;

function decodePublicJwk(jwk: Record<string, unknown>): KeyObject | string {
  const secret = PRIVATE_JWK_MEMBERS.find((name) => name in jwk);
  if (secret !== undefined)
    return `JWK has the private member "${secret}"; send the public key only, never the private key`;
  for (const [name, value] of Object.entries(jwk)) {
    if (typeof value === 'string' && value.length > JWK_MEMBER_CHARS) return `JWK member ${name} is too long`;
  }
  if (jwk.kty === 'EC') {
    if (jwk.crv !== 'P-256') return `EC curve ${String(jwk.crv).slice(0, 16)} is not P-256`;
    if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') return 'EC JWK needs x and y';
    try {
      return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, format: 'jwk' });
    } catch {
      return 'EC JWK x and y are not a point on P-256';
    }
  }
  if (jwk.kty === 'RSA') {
    if (typeof jwk.n !== 'string' || typeof jwk.e !== 'string') return 'RSA JWK needs n and e';
    try {
      return createPublicKey({ key: { kty: 'RSA', n: jwk.n, e: jwk.e }, format: 'jwk' });
    } catch {
      return 'RSA JWK could not be parsed';
    }
  }
  return `JWK kty ${String(jwk.kty).slice(0, 16)} is neither RSA nor EC`;
}

export interface ImportedPublicKey {
  key: KeyObject;
  /** Canonical base64 DER SubjectPublicKeyInfo: the one spelling stored and compared. */
  spki: string;
  algorithm: KeyWrapAlgorithm;
}

/**
 * A public key made on a device: base64 DER SPKI (or PEM), or a public JWK object; RSA 2048..4096
 * or EC P-256. Throws InvalidPublicKeyError naming the problem.
 */
export function parseImportedPublicKey(input: unknown, field = 'publicKey'): ImportedPublicKey {
  let key: KeyObject;
  if (typeof input === 'string') key = parsePublicKey(input, field);
  else if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    const decoded = decodePublicJwk(input as Record<string, unknown>);
    if (typeof decoded === 'string') throw new InvalidPublicKeyError(field, decoded);
    const violation = recipientKeyViolation(decoded);
    if (violation !== undefined) throw new InvalidPublicKeyError(field, violation);
    key = canonicalKey(decoded);
  } else
    throw new InvalidPublicKeyError(field, 'expected a base64 SubjectPublicKeyInfo string or a JWK object');
  return { key, spki: publicKeyDer(key).toString('base64'), algorithm: keyWrapAlgorithmOf(key) };
}

/**
 * DER SubjectPublicKeyInfo of a public key, or of the public half of a private key, in the canonical
 * form (a P-256 point uncompressed): the spelling stored, compared and fingerprinted.
 */
export function publicKeyDer(key: KeyObject): Buffer {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return canonicalKey(publicKey).export({ type: 'spki', format: 'der' });
}

/**
 * Whether the private key is the other half of the given public key (base64 DER SPKI, or PEM),
 * compared in canonical form: a P-256 key stored compressed before keys were stored canonical matches.
 */
export function matchesPublicKey(privateKey: KeyObject, publicKeyBase64Der: string): boolean {
  let expected: Buffer | undefined;
  try {
    expected = publicKeyDer(parsePublicKey(publicKeyBase64Der));
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
