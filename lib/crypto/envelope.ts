/**
 * Hybrid receipt envelope (docs/ENVELOPE.md): AES-256-GCM under a fresh content key (CEK), the CEK
 * wrapped with RSA-OAEP-256, and the identifying fields bound as GCM additional data the way JWE does
 * it, so an envelope is a flattened JWE with its fields spelt in standard base64.
 */
import {
  constants,
  createCipheriv,
  createDecipheriv,
  hash,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { decodeBase64, decodeBase64Url } from './base64.js';
import { DecryptionError, KeyUnavailableError } from './errors.js';
import { keyPolicyViolation, MAX_MODULUS_BITS, MIN_MODULUS_BITS, modulusBytes } from './keys.js';

export const KEY_WRAP_ALGORITHM = 'RSA-OAEP-256';
export const CONTENT_ENCRYPTION = 'A256GCM';
const CEK_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
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

export interface KeyBundle {
  /** Standard base64 of the RSA-OAEP-256-wrapped CEK. */
  encryptedAesKey: string;
  keyId: string;
  algorithm: typeof KEY_WRAP_ALGORITHM;
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

/** A public key from parsePublicKey (or the escrow key), already inside the allow-list. */
export interface Recipient {
  keyId: string;
  publicKey: KeyObject;
}

/** RFC 7516 flattened JSON serialisation, base64url members. */
export interface FlattenedJwe {
  protected: string;
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

const SHA256_BLOCK = 64;

/**
 * HMAC-SHA256(cek, label). HMAC is collision resistant in its (fixed-length) key, so the header pins
 * exactly one CEK. Spelt out over the one-shot crypto.hash because createHmac costs ~14 µs per call,
 * a quarter of a whole seal; the unit tests hold it equal to createHmac.
 */
export function keyCommitment(cek: Uint8Array): Buffer {
  if (cek.length > SHA256_BLOCK) throw new RangeError('content key longer than a SHA-256 block');
  const inner = Buffer.alloc(SHA256_BLOCK + COMMITMENT_LABEL.length);
  const outer = Buffer.alloc(SHA256_BLOCK + 32);
  for (let i = 0; i < SHA256_BLOCK; i++) {
    const byte = cek[i] ?? 0;
    inner[i] = byte ^ 0x36;
    outer[i] = byte ^ 0x5c;
  }
  COMMITMENT_LABEL.copy(inner, SHA256_BLOCK);
  hash('sha256', inner, 'buffer').copy(outer, SHA256_BLOCK);
  inner.fill(0);
  const commitment = hash('sha256', outer, 'buffer');
  outer.fill(0);
  return commitment;
}

function wrapKey(cek: Buffer, recipient: Recipient): KeyBundle {
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

/** Encrypts one receipt for one recipient; fresh CEK and IV on every call. */
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
    alg: KEY_WRAP_ALGORITHM,
    enc: CONTENT_ENCRYPTION,
    version: bound.version,
    receiptId: bound.receiptId,
    merchantId: bound.merchantId,
    transactionId: bound.transactionId,
    keyCommitment: keyCommitment(cek).toString('base64url'),
  });
  const protectedHeader = Buffer.from(header, 'utf8').toString('base64url');
  const cipher = createCipheriv('aes-256-gcm', cek, iv, { authTagLength: TAG_BYTES });
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

/**
 * The same envelope for another recipient (claiming an escrowed receipt). The recipient is not in the
 * protected header, so only keyBundle and keyId change; `cek` must come from unwrapContentKey.
 */
export function rewrapEnvelope(envelope: SealedEnvelope, cek: Buffer, recipient: Recipient): SealedEnvelope {
  const header = parseProtectedHeader(envelope.protected);
  const committed = header.keyCommitment === undefined ? undefined : decodeBase64Url(header.keyCommitment);
  if (cek.length !== CEK_BYTES || committed === undefined || !committed.equals(keyCommitment(cek))) {
    throw new Error('rewrapEnvelope: the content key is not the one this envelope commits to');
  }
  return { ...envelope, keyId: recipient.keyId, keyBundle: wrapKey(cek, recipient) };
}

// ---------------------------------------------------------------------------------------------------
// Opening. Structural checks (public information: the caller sent it) fail fast; once the key is being
// unwrapped every path runs RSA, the commitment check and GCM, and fails with the same error.

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
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAuthTag(tag);
    decipher.setAAD(aad);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    return fail('aes-gcm authentication failed');
  }
}

type ProtectedHeader = Partial<Record<string, string>>;
// Strict allow-list: zip, crit, jwk, jku, x5u and friends change how a JWE is processed; none is understood.
const HEADER_MEMBERS = new Set<string>(['alg', 'enc', 'kid', ...BOUND_NAMES, 'keyCommitment']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseProtectedHeader(encoded: unknown): ProtectedHeader {
  if (typeof encoded !== 'string' || encoded.length > MAX_PROTECTED_CHARS)
    return fail('protected header missing or too long');
  const bytes = decodeBase64Url(encoded);
  if (bytes === undefined || bytes.length === 0) return fail('protected header is not canonical base64url');
  let header: unknown;
  try {
    header = JSON.parse(utf8.decode(bytes));
  } catch {
    return fail('protected header is not UTF-8 JSON');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    return fail('protected header is not an object');
  for (const [name, value] of Object.entries(header)) {
    if (!HEADER_MEMBERS.has(name))
      fail(`protected header member ${JSON.stringify(name.slice(0, 32))} not allowed`);
    if (typeof value !== 'string') fail(`protected header member ${name} is not a string`);
  }
  const checked = header as ProtectedHeader;
  if (checked.alg !== KEY_WRAP_ALGORITHM) fail('protected header alg is not RSA-OAEP-256');
  if (checked.enc !== CONTENT_ENCRYPTION) fail('protected header enc is not A256GCM');
  return checked;
}

/** Either the exact modulus length of a known private key, or the allow-listed range when the key is remote. */
type KeyLength = number | { min: number; max: number };
const ANY_ALLOWED_KEY_LENGTH: KeyLength = { min: MIN_MODULUS_BITS / 8, max: MAX_MODULUS_BITS / 8 };

interface PreparedJwe {
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

/**
 * Everything that can be checked before touching the key. With `expected`, the envelope profile
 * applies: the header must bind exactly those fields and commit to its CEK.
 */
function prepare(
  jwe: unknown,
  keyLength: KeyLength,
  expected?: BoundFields,
  decode: Decode = decodeBase64Url,
): PreparedJwe {
  if (typeof jwe !== 'object' || jwe === null) return fail('jwe is not an object');
  const members = jwe as Record<string, unknown>;
  const header = parseProtectedHeader(members.protected);
  if (expected !== undefined) {
    for (const name of BOUND_NAMES) {
      if (header[name] !== expected[name]) fail(`envelope ${name} differs from the protected header`);
    }
    if (header.keyCommitment === undefined) fail('protected header has no key commitment');
  }
  const commitment = header.keyCommitment === undefined ? undefined : decodeBase64Url(header.keyCommitment);
  if (header.keyCommitment !== undefined && commitment?.length !== CEK_BYTES)
    fail('key commitment is not 32 bytes');

  const encryptedKey = decodeMember(members, 'encrypted_key', decode);
  const [min, max] = typeof keyLength === 'number' ? [keyLength, keyLength] : [keyLength.min, keyLength.max];
  if (encryptedKey.length < min || encryptedKey.length > max)
    fail('wrapped key length differs from the modulus length');
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
  return { aad: Buffer.from(aadText, 'latin1'), encryptedKey, iv, tag, ciphertext, commitment };
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
  const violation = privateKey.type === 'private' ? keyPolicyViolation(privateKey) : 'key is not private';
  if (violation !== undefined) fail(`private key not allowed: ${violation}`);
}

/**
 * General RSA-OAEP-256 + A256GCM flattened JWE decryption; openEnvelope is this plus the envelope
 * profile (`expected`), so the Wycheproof JWE vectors exercise the envelope code.
 */
export function decryptFlattenedJwe(
  jwe: FlattenedJwe,
  privateKey: KeyObject,
  expected?: BoundFields,
): Buffer {
  assertPrivateKey(privateKey);
  return decryptPrepared(prepare(jwe, modulusBytes(privateKey), expected), privateKey);
}

function decryptPrepared(prepared: PreparedJwe, privateKey: KeyObject): Buffer {
  let cek: Buffer | undefined;
  let failure: string | undefined;
  try {
    cek = rsaOaepSha256Decrypt(privateKey, prepared.encryptedKey);
  } catch (error) {
    failure = reasonOf(error, 'rsa-oaep-256 unwrap failed');
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
function envelopeAsJwe(envelope: unknown): { jwe: FlattenedJwe; bound: BoundFields } {
  if (typeof envelope !== 'object' || envelope === null) return fail('envelope is not an object');
  const fields = envelope as Record<string, unknown>;
  const text = (value: unknown, name: string): string =>
    typeof value === 'string' ? value : fail(`envelope ${name} is missing or not a string`);

  const bundle = fields.keyBundle;
  if (typeof bundle !== 'object' || bundle === null) return fail('envelope keyBundle is missing');
  const { algorithm, encryptedAesKey } = bundle as Record<string, unknown>;
  if (algorithm !== KEY_WRAP_ALGORITHM) fail('keyBundle algorithm is not RSA-OAEP-256');
  return {
    bound: {
      version: text(fields.version, 'version'),
      receiptId: text(fields.receiptId, 'receiptId'),
      merchantId: text(fields.merchantId, 'merchantId'),
      transactionId: text(fields.transactionId, 'transactionId'),
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

/** Opens an envelope with a user's private key. Throws DecryptionError, with the same message, on any failure. */
export function openEnvelope(envelope: unknown, privateKey: KeyObject): Buffer {
  const { jwe, bound } = envelopeAsJwe(envelope);
  assertPrivateKey(privateKey);
  return decryptPrepared(prepare(jwe, modulusBytes(privateKey), bound, decodeBase64), privateKey);
}

async function openWith(
  envelope: unknown,
  unwrap: UnwrapKey,
  keyBytes: number | undefined,
): Promise<{ cek: Buffer; plaintext: Buffer }> {
  const { jwe, bound } = envelopeAsJwe(envelope);
  const prepared = prepare(jwe, keyBytes ?? ANY_ALLOWED_KEY_LENGTH, bound, decodeBase64);
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
