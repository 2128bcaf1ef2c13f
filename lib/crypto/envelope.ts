/**
 * Hybrid receipt envelope (docs/ENVELOPE.md): AES-256-GCM under a fresh content key (CEK), the CEK
 * wrapped with RSA-OAEP-256 or ECDH-ES+A256KW (P-256) for its recipient, and the identifying fields bound as GCM additional data the way JWE does
 * it, so an envelope is a flattened JWE with its fields spelt in standard base64.
 */
import {
  constants,
  createCipheriv,
  createDecipheriv,
  createECDH,
  createHmac,
  createSecretKey,
  createPublicKey,
  diffieHellman,
  hash,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { decodeBase64, decodeBase64Url } from './base64.js';
import { DecryptionError, KeyUnavailableError } from './errors.js';
import {
  ecKeyPolicyViolation,
  keyPolicyViolation,
  keyWrapAlgorithmOf,
  MAX_MODULUS_BITS,
  MIN_MODULUS_BITS,
  modulusBytes,
  recipientKeyViolation,
  type KeyWrapAlgorithm,
} from './keys.js';

export const KEY_WRAP_ALGORITHM = 'RSA-OAEP-256';
export const ECDH_KEY_WRAP_ALGORITHM = 'ECDH-ES+A256KW';
export const CONTENT_ENCRYPTION = 'A256GCM';
export type { KeyWrapAlgorithm };
const CEK_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
// AES-KW of a 32-byte key: the key plus one 8-byte integrity block (RFC 3394).
const AES_KW_BYTES = CEK_BYTES + 8;
const P256_COORDINATE_BYTES = 32;
// Our headers are ~300 characters; the cap keeps JSON.parse away from attacker-sized input.
const MAX_PROTECTED_CHARS = 4096;
// Domain separation: this HMAC output must never coincide with any other use of the same key.
const COMMITMENT_LABEL = Buffer.from('receipt-envelope/v1 key commitment for AES-256-GCM', 'ascii');

export interface BoundFields {
  version: string;
  receiptId: string;
  merchantId: string;
  transactionId: string;
}
const BOUND_NAMES = ['version', 'receiptId', 'merchantId', 'transactionId'] as const;

/** The ephemeral public key of an ECDH-ES recipient, as the JWE `epk` member. */
export type EcPublicJwk = {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
};

export interface KeyBundle {
  /** Standard base64 of the wrapped CEK: RSA-OAEP-256 ciphertext, or the 40-byte AES-KW output. */
  encryptedAesKey: string;
  keyId: string;
  /** The JWE `alg` for this recipient; new envelopes carry it here rather than in the protected header. */
  algorithm: KeyWrapAlgorithm;
  /** ECDH-ES+A256KW only: the ephemeral public key of this receipt. */
  epk?: EcPublicJwk;
}

/** ciphertext, iv, authTag and encryptedAesKey are standard base64; protected is unpadded base64url. */
export type SealedEnvelope = BoundFields & {
  keyId: string;
  keyBundle: KeyBundle;
  ciphertext: string;
  iv: string;
  authTag: string;
  protected: string;
};

/**
 * A public key from parsePublicKey (or the escrow key), already inside the allow-list. `algorithm`
 * defaults to the one the key's type implies (keyWrapAlgorithmOf); when given it must agree with it.
 */
export interface Recipient {
  keyId: string;
  publicKey: KeyObject;
  algorithm?: KeyWrapAlgorithm;
}

/** The per-recipient unprotected header of a flattened JWE: where new envelopes keep alg and epk. */
// Type aliases, not interfaces: jose's header type has an index signature that only aliases satisfy.
export type RecipientHeader = {
  alg: string;
  epk?: EcPublicJwk;
};

/** RFC 7516 flattened JSON serialisation, base64url members. */
export interface FlattenedJwe {
  protected: string;
  header?: RecipientHeader;
  encrypted_key: string;
  iv: string;
  ciphertext: string;
  tag: string;
  aad?: string;
}

/**
 * Unwraps an encrypted CEK. Throw DecryptionError (or anything else) when the key is refused; only a
 * KeyUnavailableError escapes as an outage, everything else is folded into the uniform failure.
 */
export type UnwrapKey = (encryptedKey: Buffer) => Promise<Buffer>;

/**
 * HMAC-SHA256(cek, label). HMAC is collision resistant in its (fixed-length) key, so the header pins
 * exactly one CEK.
 */
export function keyCommitment(cek: Uint8Array): Buffer {
  return createHmac('sha256', secretKey(cek)).update(COMMITMENT_LABEL).digest();
}

/**
 * Keys go to node:crypto as KeyObjects: handed a Buffer, createCipheriv, createDecipheriv and
 * createHmac first rule out a KeyObject and a CryptoKey the slow way (about 13 µs each on Node 24,
 * against under 1 µs for createSecretKey), which was a tenth of a P-256 open. The KeyObject holds its
 * own copy of the bytes, released with it; the Buffers here are still zeroed after use.
 */
const secretKey = (bytes: Uint8Array): KeyObject => createSecretKey(bytes);

// ---------------------------------------------------------------------------------------------------
// ECDH-ES+A256KW (RFC 7518 §4.6): ECDH between an ephemeral P-256 key and the recipient's, the Concat
// KDF of NIST SP 800-56A (§4.6.2) turns the shared secret into a 256-bit key-encryption key, and AES
// Key Wrap (RFC 3394) wraps the CEK with it.

const uint32 = (value: number): Buffer => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
};
const lengthPrefixed = (data: Uint8Array): Buffer => Buffer.concat([uint32(data.length), data]);

/**
 * Concat KDF with SHA-256 as JWA profiles it: OtherInfo = AlgorithmID || PartyUInfo || PartyVInfo ||
 * SuppPubInfo (keydatalen in bits), each datum length-prefixed, SuppPrivInfo empty. jose implements
 * it but does not export it; ecdh.test.ts holds this one to jose's output and to RFC 7518 Appendix C.
 */
export function concatKdf(
  sharedSecret: Uint8Array,
  algorithmId: string,
  keyBits: number,
  partyUInfo: Uint8Array = new Uint8Array(0),
  partyVInfo: Uint8Array = new Uint8Array(0),
): Buffer {
  const otherInfo = Buffer.concat([
    lengthPrefixed(Buffer.from(algorithmId, 'ascii')),
    lengthPrefixed(partyUInfo),
    lengthPrefixed(partyVInfo),
    uint32(keyBits),
  ]);
  const rounds = Math.ceil(keyBits / 256);
  const output = Buffer.alloc(rounds * 32);
  for (let round = 1; round <= rounds; round++) {
    hash('sha256', Buffer.concat([uint32(round), sharedSecret, otherInfo]), 'buffer').copy(
      output,
      (round - 1) * 32,
    );
  }
  return output.subarray(0, keyBits / 8);
}

// For ECDH-ES+A256KW the whole OtherInfo is a constant; one SHA-256 block over counter || Z || it.
const ECDH_OTHER_INFO = Buffer.concat([
  lengthPrefixed(Buffer.from(ECDH_KEY_WRAP_ALGORITHM, 'ascii')),
  uint32(0),
  uint32(0),
  uint32(256),
]);
const ROUND_ONE = uint32(1);

function ecdhKek(sharedSecret: Buffer): Buffer {
  const input = Buffer.concat([ROUND_ONE, sharedSecret, ECDH_OTHER_INFO]);
  const kek = hash('sha256', input, 'buffer');
  input.fill(0);
  return kek;
}

// RFC 3394 §2.2.3.1 default initial value; node's id-aes256-wrap needs it spelt out.
const AES_KW_IV = Buffer.from('A6A6A6A6A6A6A6A6', 'hex');

function aesKeyWrap(kek: Buffer, cek: Buffer): Buffer {
  const cipher = createCipheriv('id-aes256-wrap', secretKey(kek), AES_KW_IV);
  return Buffer.concat([cipher.update(cek), cipher.final()]);
}

function aesKeyUnwrap(kek: Buffer, wrapped: Buffer): Buffer {
  const decipher = createDecipheriv('id-aes256-wrap', secretKey(kek), AES_KW_IV);
  return Buffer.concat([decipher.update(wrapped), decipher.final()]);
}

/** Uncompressed point (04 || x || y) of a P-256 public key, for ECDH.computeSecret; cached per KeyObject. */
const publicPoints = new WeakMap<KeyObject, Buffer>();
function publicPoint(key: KeyObject): Buffer {
  let point = publicPoints.get(key);
  if (point === undefined) {
    const jwk = key.export({ format: 'jwk' });
    point = Buffer.concat([
      Buffer.from([4]),
      Buffer.from(jwk.x ?? '', 'base64url'),
      Buffer.from(jwk.y ?? '', 'base64url'),
    ]);
    publicPoints.set(key, point);
  }
  return point;
}

function ecdhWrap(cek: Buffer, recipient: Recipient): KeyBundle {
  // A fresh key per receipt: createECDH's raw points skip the KeyObject round trips of diffieHellman().
  const ephemeral = createECDH('prime256v1');
  const epkPoint = ephemeral.generateKeys();
  const shared = ephemeral.computeSecret(publicPoint(recipient.publicKey));
  const kek = ecdhKek(shared);
  shared.fill(0);
  const wrapped = aesKeyWrap(kek, cek);
  kek.fill(0);
  return {
    encryptedAesKey: wrapped.toString('base64'),
    keyId: recipient.keyId,
    algorithm: ECDH_KEY_WRAP_ALGORITHM,
    epk: {
      kty: 'EC',
      crv: 'P-256',
      x: epkPoint.subarray(1, 1 + P256_COORDINATE_BYTES).toString('base64url'),
      y: epkPoint.subarray(1 + P256_COORDINATE_BYTES).toString('base64url'),
    },
  };
}

function algorithmOf(recipient: Recipient): KeyWrapAlgorithm {
  const violation = recipientKeyViolation(recipient.publicKey);
  if (violation !== undefined) throw new Error(`recipient key not allowed: ${violation}`);
  const implied = keyWrapAlgorithmOf(recipient.publicKey);
  if (recipient.algorithm !== undefined && recipient.algorithm !== implied)
    throw new Error(`recipient algorithm ${recipient.algorithm} does not fit a ${implied} key`);
  return implied;
}

function wrapKey(cek: Buffer, recipient: Recipient): KeyBundle {
  if (algorithmOf(recipient) === ECDH_KEY_WRAP_ALGORITHM) return ecdhWrap(cek, recipient);
  const encrypted = publicEncrypt(
    // oaepHash is spelt out because node's OAEP default is SHA-1, which is RSA-OAEP, not RSA-OAEP-256.
    { key: recipient.publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    cek,
  );
  return {
    encryptedAesKey: encrypted.toString('base64'),
    keyId: recipient.keyId,
    algorithm: KEY_WRAP_ALGORITHM,
  };
}

/**
 * Encrypts one receipt for one recipient; fresh CEK and IV on every call. The protected header holds
 * enc, the bound fields and the key commitment but no alg: the recipient's algorithm lives in the key
 * bundle (the JWE per-recipient header), so a claim can hand an escrowed receipt to a P-256 key
 * without changing the additional data.
 */
export function sealEnvelope(
  plaintext: Uint8Array,
  bound: BoundFields,
  recipient: Recipient,
): SealedEnvelope {
  // One draw for both: each randomBytes call has a fixed cost comparable to hashing the header.
  const random = randomBytes(CEK_BYTES + IV_BYTES);
  const cek = random.subarray(0, CEK_BYTES);
  const iv = random.subarray(CEK_BYTES);
  const header = JSON.stringify({
    enc: CONTENT_ENCRYPTION,
    version: bound.version,
    receiptId: bound.receiptId,
    merchantId: bound.merchantId,
    transactionId: bound.transactionId,
    keyCommitment: keyCommitment(cek).toString('base64url'),
  });
  const protectedHeader = Buffer.from(header, 'utf8').toString('base64url');
  const cipher = createCipheriv('aes-256-gcm', secretKey(cek), iv, { authTagLength: TAG_BYTES });
  // RFC 7516 §5.1 step 14: the AAD is the ASCII of the encoded header, so jose computes the same tag.
  cipher.setAAD(Buffer.from(protectedHeader, 'latin1'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const keyBundle = wrapKey(cek, recipient);
  const authTag = cipher.getAuthTag().toString('base64');
  const ivText = iv.toString('base64');
  random.fill(0);
  return {
    version: bound.version,
    receiptId: bound.receiptId,
    merchantId: bound.merchantId,
    transactionId: bound.transactionId,
    keyId: recipient.keyId,
    keyBundle,
    ciphertext: ciphertext.toString('base64'),
    iv: ivText,
    authTag,
    protected: protectedHeader,
  };
}

const PROOF_FIELDS: BoundFields = {
  version: '1.0',
  receiptId: '00000000-0000-4000-8000-000000000000',
  merchantId: '00000000-0000-4000-8000-000000000000',
  transactionId: '00000000-0000-4000-8000-000000000000',
};

/**
 * Why no envelope can be sealed to this key, or undefined when one can: a throw-away envelope is
 * sealed to it exactly as a receipt would be. A key is proven this way when it is imported, so a key
 * OpenSSL cannot encrypt to is refused there, not at some merchant's payment.
 */
export function sealingProblem(publicKey: KeyObject): string | undefined {
  try {
    sealEnvelope(randomBytes(16), PROOF_FIELDS, { keyId: 'import-proof', publicKey });
    return undefined;
  } catch (error) {
    return `no envelope can be sealed to this key (${error instanceof Error ? error.message : 'unknown error'})`;
  }
}

/** Envelopes sealed before per-recipient algorithms: `alg` inside the protected header, RSA only. */
function isLegacy(envelope: SealedEnvelope): boolean {
  return parseProtectedHeader(envelope.protected).alg !== undefined;
}

/**
 * The same envelope for another recipient (claiming an escrowed receipt). The recipient is not in the
 * protected header, so only keyBundle and keyId change; `cek` must come from unwrapContentKey.
 * A legacy envelope pins RSA-OAEP-256 in its additional data, so it can only be re-wrapped for an RSA
 * key: transferEnvelope re-seals it for anyone else.
 */
export function rewrapEnvelope(envelope: SealedEnvelope, cek: Buffer, recipient: Recipient): SealedEnvelope {
  const header = parseProtectedHeader(envelope.protected);
  const committed = header.keyCommitment === undefined ? undefined : decodeBase64Url(header.keyCommitment);
  if (cek.length !== CEK_BYTES || committed === undefined || !committed.equals(keyCommitment(cek))) {
    throw new Error('rewrapEnvelope: the content key is not the one this envelope commits to');
  }
  if (header.alg !== undefined && algorithmOf(recipient) !== header.alg) {
    throw new Error(
      `rewrapEnvelope: a legacy ${header.alg} envelope cannot be re-wrapped for another algorithm`,
    );
  }
  return { ...envelope, keyId: recipient.keyId, keyBundle: wrapKey(cek, recipient) };
}

/**
 * Hands an envelope opened with `unwrap` (the escrow key) to `recipient`: re-wrapped when it can be,
 * re-sealed under a new CEK with the same bound fields when it is a legacy envelope and the recipient
 * is not RSA. Either way the result is only returned after the commitment and GCM tag verified.
 */
export async function transferEnvelope(
  envelope: SealedEnvelope,
  unwrap: UnwrapKey,
  recipient: Recipient,
  keyBytes?: number,
): Promise<SealedEnvelope> {
  const { cek, plaintext } = await openWith(envelope, unwrap, keyBytes);
  try {
    if (isLegacy(envelope) && algorithmOf(recipient) !== KEY_WRAP_ALGORITHM) {
      const { version, receiptId, merchantId, transactionId } = envelope;
      return sealEnvelope(plaintext, { version, receiptId, merchantId, transactionId }, recipient);
    }
    return rewrapEnvelope(envelope, cek, recipient);
  } finally {
    cek.fill(0);
    plaintext.fill(0);
  }
}

// ---------------------------------------------------------------------------------------------------
// Opening. Structural checks (public information: the caller sent it) fail fast; once the key is being
// unwrapped every path runs the unwrap, the commitment check and GCM, and fails with the same error.

function fail(reason: string): never {
  throw new DecryptionError(reason);
}

const reasonOf = (error: unknown, fallback: string): string =>
  error instanceof DecryptionError
    ? error.reason
    : `${fallback}: ${error instanceof Error ? error.name : typeof error}`;

/** RSA-OAEP with SHA-256 and MGF1-SHA-256. Throws DecryptionError on any failure. */
export function rsaOaepSha256Decrypt(
  privateKey: KeyObject,
  ciphertext: Uint8Array,
  label?: Uint8Array,
): Buffer {
  const violation = privateKey.type === 'private' ? keyPolicyViolation(privateKey) : 'key is not private';
  if (violation !== undefined) fail(`private key not allowed: ${violation}`);
  if (ciphertext.length !== modulusBytes(privateKey))
    fail('wrapped key length differs from the modulus length');
  try {
    return privateDecrypt(
      {
        key: privateKey,
        padding: constants.RSA_PKCS1_OAEP_PADDING,
        oaepHash: 'sha256',
        ...(label === undefined ? {} : { oaepLabel: label }),
      },
      ciphertext,
    );
  } catch {
    return fail('rsa-oaep-256 unwrap failed');
  }
}

/** ECDH-ES+A256KW unwrap with a P-256 private key and an already validated epk. Throws DecryptionError. */
export function ecdhEsA256kwDecrypt(privateKey: KeyObject, epk: KeyObject, wrapped: Uint8Array): Buffer {
  const violation = privateKey.type === 'private' ? ecKeyPolicyViolation(privateKey) : 'key is not private';
  if (violation !== undefined) fail(`private key not allowed: ${violation}`);
  if (wrapped.length !== AES_KW_BYTES) fail('wrapped key is not 40 bytes');
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey, publicKey: epk });
  } catch {
    return fail('ecdh key agreement failed');
  }
  const kek = ecdhKek(shared);
  shared.fill(0);
  try {
    return aesKeyUnwrap(kek, Buffer.from(wrapped));
  } catch {
    return fail('aes-kw unwrap failed');
  } finally {
    kek.fill(0);
  }
}

/** AES-256-GCM with a 96-bit IV and a 128-bit tag, nothing else. Throws DecryptionError on any failure. */
export function aesGcmDecrypt(
  key: Uint8Array,
  iv: Uint8Array,
  ciphertext: Uint8Array,
  tag: Uint8Array,
  aad: Uint8Array,
): Buffer {
  if (key.length !== CEK_BYTES) fail('content key is not 32 bytes');
  if (iv.length !== IV_BYTES) fail('iv is not 12 bytes');
  if (tag.length !== TAG_BYTES) fail('authentication tag is not 16 bytes');
  try {
    // authTagLength pins the tag size: without it node would accept a truncated tag.
    const decipher = createDecipheriv('aes-256-gcm', secretKey(key), iv, { authTagLength: TAG_BYTES });
    decipher.setAuthTag(tag);
    decipher.setAAD(aad);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    return fail('aes-gcm authentication failed');
  }
}

type ProtectedHeader = Partial<Record<string, string>> & { epk?: unknown };
// Strict allow-list: zip, crit, jwk, jku, x5u and friends change how a JWE is processed; none is understood.
const HEADER_MEMBERS = new Set<string>(['alg', 'enc', 'kid', ...BOUND_NAMES, 'keyCommitment']);
const RECIPIENT_HEADER_MEMBERS = new Set<string>(['alg', 'epk']);
const EPK_MEMBERS = ['kty', 'crv', 'x', 'y'];

/**
 * `allowEpk`: a general JWE (jose puts epk in the protected header when it makes one); an envelope's
 * epk is only ever in its key bundle.
 */
function parseProtectedHeader(encoded: unknown, allowEpk = false): ProtectedHeader {
  if (typeof encoded !== 'string' || encoded.length > MAX_PROTECTED_CHARS)
    return fail('protected header missing or too long');
  const bytes = decodeBase64Url(encoded);
  if (bytes === undefined || bytes.length === 0) return fail('protected header is not canonical base64url');
  let header: unknown;
  try {
    // isUtf8 then toString: what a fatal TextDecoder does (a BOM aside, which no header has), at a
    // fraction of its cost per call.
    if (!isUtf8(bytes)) throw new Error('not UTF-8');
    header = JSON.parse(bytes.toString('utf8'));
  } catch {
    return fail('protected header is not UTF-8 JSON');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    return fail('protected header is not an object');
  for (const [name, value] of Object.entries(header)) {
    if (allowEpk && name === 'epk') continue;
    if (!HEADER_MEMBERS.has(name))
      fail(`protected header member ${JSON.stringify(name.slice(0, 32))} not allowed`);
    if (typeof value !== 'string') fail(`protected header member ${name} is not a string`);
  }
  const checked = header as ProtectedHeader;
  if (checked.enc !== CONTENT_ENCRYPTION) fail('protected header enc is not A256GCM');
  return checked;
}

function parseRecipientHeader(header: unknown): { alg?: unknown; epk?: unknown } {
  if (header === undefined) return {};
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    return fail('unprotected header is not an object');
  for (const name of Object.keys(header)) {
    if (!RECIPIENT_HEADER_MEMBERS.has(name))
      fail(`unprotected header member ${JSON.stringify(name.slice(0, 32))} not allowed`);
  }
  return header as { alg?: unknown; epk?: unknown };
}

/**
 * An epk must be exactly a public P-256 JWK with canonical 32-byte coordinates, and a point on the
 * curve: createPublicKey refuses points off it, which is what stops invalid-curve attacks on the
 * recipient's key.
 */
function parseEpk(epk: unknown): KeyObject {
  if (typeof epk !== 'object' || epk === null || Array.isArray(epk)) return fail('epk is not an object');
  const members = epk as Record<string, unknown>;
  const names = Object.keys(members);
  if (names.length !== EPK_MEMBERS.length || !EPK_MEMBERS.every((name) => names.includes(name)))
    fail('epk members are not exactly kty, crv, x, y');
  if (members.kty !== 'EC' || members.crv !== 'P-256') fail('epk is not an EC P-256 key');
  for (const name of ['x', 'y']) {
    const value = members[name];
    const bytes = typeof value === 'string' ? decodeBase64Url(value) : undefined;
    if (bytes?.length !== P256_COORDINATE_BYTES) fail(`epk ${name} is not a canonical 32-byte coordinate`);
  }
  try {
    return createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: members.x as string, y: members.y as string },
      format: 'jwk',
    });
  } catch {
    return fail('epk is not a point on P-256');
  }
}

type Unwrapping =
  { alg: typeof KEY_WRAP_ALGORITHM } | { alg: typeof ECDH_KEY_WRAP_ALGORITHM; epk: KeyObject };

/** alg and epk from the protected and the per-recipient header, which must not both name either. */
function unwrappingOf(
  protectedHeader: ProtectedHeader,
  recipientHeader: { alg?: unknown; epk?: unknown },
): Unwrapping {
  if (protectedHeader.alg !== undefined && recipientHeader.alg !== undefined)
    fail('alg is in both the protected and the unprotected header');
  if (protectedHeader.epk !== undefined && recipientHeader.epk !== undefined)
    fail('epk is in both the protected and the unprotected header');
  const alg = protectedHeader.alg ?? recipientHeader.alg;
  const epk = protectedHeader.epk ?? recipientHeader.epk;
  if (alg === KEY_WRAP_ALGORITHM) {
    if (epk !== undefined) fail('epk with RSA-OAEP-256');
    return { alg };
  }
  if (alg === ECDH_KEY_WRAP_ALGORITHM) {
    if (epk === undefined) fail('ECDH-ES+A256KW without epk');
    return { alg, epk: parseEpk(epk) };
  }
  return fail('alg is not RSA-OAEP-256 or ECDH-ES+A256KW');
}

interface PreparedJwe {
  unwrapping: Unwrapping;
  aad: Buffer;
  encryptedKey: Buffer;
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  commitment: Buffer | undefined;
}

/** Canonical base64url for JWE members; canonical standard base64 for envelope members. */
type Decode = (value: string) => Buffer | undefined;

function decodeMember(jwe: Record<string, unknown>, name: keyof FlattenedJwe, decode: Decode): Buffer {
  const value = jwe[name];
  const decoded = typeof value === 'string' ? decode(value) : undefined;
  return decoded ?? fail(`${name} is missing or not canonically encoded`);
}

/** What an envelope adds to a JWE: the fields the header must bind, and the key bundle's alg and epk. */
interface EnvelopeProfile {
  bound: BoundFields;
  algorithm: unknown;
  epk: unknown;
}

/**
 * The recipient header of an envelope. Legacy envelopes have alg protected and nothing per
 * recipient: the key bundle's algorithm must then say the same, and there is no epk.
 */
function envelopeRecipientHeader(
  header: ProtectedHeader,
  profile: EnvelopeProfile,
): { alg?: unknown; epk?: unknown } {
  if (header.alg === undefined) return { alg: profile.algorithm, epk: profile.epk };
  if (profile.algorithm !== header.alg) fail('keyBundle algorithm differs from the protected alg');
  if (profile.epk !== undefined) fail('legacy envelope with an epk');
  return {};
}

/**
 * Everything that can be checked before touching the key. With a profile, the envelope rules apply:
 * the header must bind exactly its fields and commit to its CEK.
 */
function prepare(jwe: unknown, profile?: EnvelopeProfile, decode: Decode = decodeBase64Url): PreparedJwe {
  if (typeof jwe !== 'object' || jwe === null) return fail('jwe is not an object');
  const members = jwe as Record<string, unknown>;
  const header = parseProtectedHeader(members.protected, profile === undefined);
  const unwrapping = unwrappingOf(
    header,
    profile === undefined ? parseRecipientHeader(members.header) : envelopeRecipientHeader(header, profile),
  );
  if (profile !== undefined) {
    for (const name of BOUND_NAMES) {
      if (header[name] !== profile.bound[name]) fail(`envelope ${name} differs from the protected header`);
    }
    if (header.keyCommitment === undefined) fail('protected header has no key commitment');
  }
  const commitment = header.keyCommitment === undefined ? undefined : decodeBase64Url(header.keyCommitment);
  if (header.keyCommitment !== undefined && commitment?.length !== CEK_BYTES)
    fail('key commitment is not 32 bytes');

  const encryptedKey = decodeMember(members, 'encrypted_key', decode);
  const iv = decodeMember(members, 'iv', decode);
  if (iv.length !== IV_BYTES) fail('iv is not 12 bytes');
  const tag = decodeMember(members, 'tag', decode);
  if (tag.length !== TAG_BYTES) fail('authentication tag is not 16 bytes');
  const ciphertext = decodeMember(members, 'ciphertext', decode);

  let aadText = members.protected as string;
  if (members.aad !== undefined) {
    decodeMember(members, 'aad', decode);
    aadText += `.${members.aad as string}`;
  }
  return { unwrapping, aad: Buffer.from(aadText, 'latin1'), encryptedKey, iv, tag, ciphertext, commitment };
}

/**
 * RFC 7516 §11.5: a failed unwrap carries on with a random CEK so that it fails at the tag like any
 * other forgery. The commitment is compared in constant time and GCM always runs.
 */
function finish(
  prepared: PreparedJwe,
  unwrapped: Buffer | undefined,
  unwrapFailure: string | undefined,
): { cek: Buffer; plaintext: Buffer } {
  let reason = unwrapFailure;
  let cek = unwrapped;
  if (cek === undefined || cek.length !== CEK_BYTES) {
    reason ??= 'unwrapped content key is not 32 bytes';
    cek = randomBytes(CEK_BYTES);
  }
  if (prepared.commitment !== undefined && !timingSafeEqual(keyCommitment(cek), prepared.commitment)) {
    reason ??= 'key commitment mismatch';
  }
  let plaintext: Buffer | undefined;
  try {
    plaintext = aesGcmDecrypt(cek, prepared.iv, prepared.ciphertext, prepared.tag, prepared.aad);
  } catch (error) {
    reason ??= reasonOf(error, 'aes-gcm failed');
  }
  if (reason !== undefined || plaintext === undefined) {
    plaintext?.fill(0);
    return fail(reason ?? 'aes-gcm failed');
  }
  return { cek, plaintext };
}

function assertPrivateKey(privateKey: KeyObject): void {
  const violation = privateKey.type === 'private' ? recipientKeyViolation(privateKey) : 'key is not private';
  if (violation !== undefined) fail(`private key not allowed: ${violation}`);
}

/**
 * General flattened JWE decryption (RSA-OAEP-256 or ECDH-ES+A256KW, A256GCM); openEnvelope is this
 * plus the envelope profile, so the Wycheproof JWE vectors and jose-made JWEs exercise the envelope code.
 */
export function decryptFlattenedJwe(
  jwe: FlattenedJwe,
  privateKey: KeyObject,
  expected?: BoundFields,
): Buffer {
  assertPrivateKey(privateKey);
  const prepared = prepare(jwe);
  if (expected !== undefined) {
    // The profile's bound-field and commitment checks, for a JWE whose alg sits wherever jose put it.
    const header = parseProtectedHeader(jwe.protected, true);
    for (const name of BOUND_NAMES) {
      if (header[name] !== expected[name]) fail(`envelope ${name} differs from the protected header`);
    }
    if (prepared.commitment === undefined) fail('protected header has no key commitment');
  }
  return decryptPrepared(prepared, privateKey);
}

function decryptPrepared(prepared: PreparedJwe, privateKey: KeyObject): Buffer {
  const { unwrapping } = prepared;
  // The caller's own key against the envelope's public alg: nothing secret to protect by carrying on.
  if (keyWrapAlgorithmOf(privateKey) !== unwrapping.alg)
    fail(`private key type does not fit ${unwrapping.alg}`);
  let cek: Buffer | undefined;
  let failure: string | undefined;
  try {
    cek =
      unwrapping.alg === ECDH_KEY_WRAP_ALGORITHM
        ? ecdhEsA256kwDecrypt(privateKey, unwrapping.epk, prepared.encryptedKey)
        : rsaOaepSha256Decrypt(privateKey, prepared.encryptedKey);
  } catch (error) {
    failure = reasonOf(error, `${unwrapping.alg} unwrap failed`);
  }
  const opened = finish(prepared, cek, failure);
  opened.cek.fill(0);
  return opened.plaintext;
}

/**
 * Checks an envelope's shape and names its members as the flattened JWE it is. The members stay in
 * standard base64 and are decoded as such (prepare with decodeBase64): re-spelling a receipt-sized
 * ciphertext as base64url only to decode it again costs more than the rest of the checks.
 */
const text = (value: unknown, name: string): string =>
  typeof value === 'string' ? value : fail(`envelope ${name} is missing or not a string`);

function envelopeAsJwe(envelope: unknown): { jwe: FlattenedJwe; profile: EnvelopeProfile } {
  if (typeof envelope !== 'object' || envelope === null) return fail('envelope is not an object');
  const fields = envelope as Record<string, unknown>;

  const bundle = fields.keyBundle;
  if (typeof bundle !== 'object' || bundle === null) return fail('envelope keyBundle is missing');
  const { algorithm, encryptedAesKey, epk } = bundle as Record<string, unknown>;
  return {
    profile: {
      bound: {
        version: text(fields.version, 'version'),
        receiptId: text(fields.receiptId, 'receiptId'),
        merchantId: text(fields.merchantId, 'merchantId'),
        transactionId: text(fields.transactionId, 'transactionId'),
      },
      algorithm,
      epk,
    },
    jwe: {
      protected: text(fields.protected, 'protected'),
      encrypted_key: text(encryptedAesKey, 'keyBundle.encryptedAesKey'),
      iv: text(fields.iv, 'iv'),
      ciphertext: text(fields.ciphertext, 'ciphertext'),
      tag: text(fields.authTag, 'authTag'),
    },
  };
}

/**
 * An envelope as the RFC 7516 flattened JSON any JOSE library opens (jose.flattenedDecrypt): members
 * re-spelt as base64url, and for new envelopes alg and epk as the per-recipient header.
 */
export function toFlattenedJwe(envelope: SealedEnvelope): FlattenedJwe {
  const url = (base64: string): string => Buffer.from(base64, 'base64').toString('base64url');
  const { algorithm, epk } = envelope.keyBundle;
  return {
    protected: envelope.protected,
    ...(isLegacy(envelope) ? {} : { header: { alg: algorithm, ...(epk === undefined ? {} : { epk }) } }),
    encrypted_key: url(envelope.keyBundle.encryptedAesKey),
    iv: url(envelope.iv),
    ciphertext: url(envelope.ciphertext),
    tag: url(envelope.authTag),
  };
}

/** Opens an envelope with a user's private key. Throws DecryptionError, with the same message, on any failure. */
export function openEnvelope(envelope: unknown, privateKey: KeyObject): Buffer {
  const { jwe, profile } = envelopeAsJwe(envelope);
  assertPrivateKey(privateKey);
  return decryptPrepared(prepare(jwe, profile, decodeBase64), privateKey);
}

/** Either the exact modulus length of a known RSA key, or the allow-listed range when the key is remote. */
const ANY_ALLOWED_KEY_BYTES = { min: MIN_MODULUS_BITS / 8, max: MAX_MODULUS_BITS / 8 };

async function openWith(
  envelope: unknown,
  unwrap: UnwrapKey,
  keyBytes: number | undefined,
): Promise<{ cek: Buffer; plaintext: Buffer }> {
  const { jwe, profile } = envelopeAsJwe(envelope);
  const prepared = prepare(jwe, profile, decodeBase64);
  // The remote key (escrow) is RSA.
  if (prepared.unwrapping.alg !== KEY_WRAP_ALGORITHM) fail('envelope is not wrapped with RSA-OAEP-256');
  const length = prepared.encryptedKey.length;
  if (
    keyBytes !== undefined
      ? length !== keyBytes
      : length < ANY_ALLOWED_KEY_BYTES.min || length > ANY_ALLOWED_KEY_BYTES.max
  )
    fail('wrapped key length differs from the modulus length');
  let cek: Buffer | undefined;
  let failure: string | undefined;
  try {
    cek = await unwrap(prepared.encryptedKey);
  } catch (error) {
    // An unreachable key service is an outage, not a bad envelope; everything else is a refused key.
    if (error instanceof KeyUnavailableError) throw error;
    failure = reasonOf(error, 'unwrap failed');
  }
  return finish(prepared, cek, failure);
}

/** Opens an envelope whose CEK is unwrapped elsewhere (the escrow key in KMS). */
export async function openEnvelopeWith(
  envelope: unknown,
  unwrap: UnwrapKey,
  keyBytes?: number,
): Promise<Buffer> {
  const opened = await openWith(envelope, unwrap, keyBytes);
  opened.cek.fill(0);
  return opened.plaintext;
}

/** The CEK of an envelope, returned only after the commitment and the GCM tag have both verified. */
export async function unwrapContentKey(
  envelope: unknown,
  unwrap: UnwrapKey,
  keyBytes?: number,
): Promise<Buffer> {
  const opened = await openWith(envelope, unwrap, keyBytes);
  opened.plaintext.fill(0);
  return opened.cek;
}
