/**
 * Opens a receipt envelope on the device with WebCrypto only (browsers, Node >= 20, React Native with
 * a WebCrypto implementation). It makes the checks the server makes (lib/crypto/envelope.ts) and
 * fails with one error whatever went wrong, so a caller that reports failures offers a tamperer no
 * oracle. docs/ENVELOPE.md describes the format.
 */
import {
  decodeBase64,
  decodeBase64Url,
  subtle as platformSubtle,
  type KeyAlgorithmMembers,
  type WebCryptoKey,
} from '@receipt-service/receipt-core';
import type { components } from './generated/api.js';

export type KeyWrapAlgorithm = 'RSA-OAEP-256' | 'ECDH-ES+A256KW';
export const KEY_WRAP_ALGORITHMS: readonly KeyWrapAlgorithm[] = ['RSA-OAEP-256', 'ECDH-ES+A256KW'];

type StoredEnvelope = components['schemas']['EncryptedReceiptEnvelope'];

/** Ephemeral public key of an ECDH-ES+A256KW key bundle (RFC 7518 §4.6.1.1). */
export type EphemeralPublicKey = NonNullable<StoredEnvelope['keyBundle']['epk']>;

/**
 * An envelope as the service returns it: receipts/encrypt's answer (either form), or the `envelope`
 * member of a receipt fetch (`GET /receipts/{receiptId}`, `GET /payments/{gateway}/{paymentId}/receipt`).
 * The members openEnvelope reads, typed from the OpenAPI document, so a whole response
 * (`{ success, data }`) or a fetch's `{ envelope, mapping }` does not compile where an envelope is due.
 * Members are standard base64 except `protected`, the JWE's base64url protected header.
 */
export type Envelope = Pick<
  StoredEnvelope,
  | 'version'
  | 'receiptId'
  | 'merchantId'
  | 'transactionId'
  | 'keyBundle'
  | 'ciphertext'
  | 'iv'
  | 'authTag'
  | 'protected'
>;

const ENVELOPE_ERROR_MESSAGE = 'The receipt envelope could not be opened with this key.';

/** The one failure of openEnvelope: the same message whether the envelope, the key or the data was wrong. */
export class EnvelopeError extends Error {
  constructor() {
    super(ENVELOPE_ERROR_MESSAGE);
    this.name = 'EnvelopeError';
  }
}

const CONTENT_ENCRYPTION = 'A256GCM';
const LEGACY_ALGORITHM: KeyWrapAlgorithm = 'RSA-OAEP-256';
const CEK_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const AES_KW_WRAPPED_BYTES = CEK_BYTES + 8;
const P256_COORDINATE_BYTES = 32;
const MIN_MODULUS_BITS = 2048;
const MAX_MODULUS_BITS = 4096;
const MAX_PROTECTED_CHARS = 4096;
const BOUND_NAMES = ['version', 'receiptId', 'merchantId', 'transactionId'] as const;
// Strict allow-list, as on the server: zip, crit, jku and friends change how a JWE is processed.
const HEADER_MEMBERS = new Set<string>(['alg', 'enc', 'kid', ...BOUND_NAMES, 'keyCommitment']);
const EPK_MEMBERS = new Set<string>(['kty', 'crv', 'x', 'y']);

const ascii = new TextEncoder();
const COMMITMENT_LABEL = ascii.encode('receipt-envelope/v1 key commitment for AES-256-GCM');
const ECDH_ALGORITHM_ID = ascii.encode('ECDH-ES+A256KW');

/** Thrown inside this module only; every exit turns it into EnvelopeError. */
class Refused extends Error {}
function refuse(): never {
  throw new Refused();
}

interface Prepared {
  algorithm: KeyWrapAlgorithm;
  aad: Uint8Array;
  encryptedKey: Uint8Array;
  epk: EphemeralPublicKey | undefined;
  iv: Uint8Array;
  ciphertextAndTag: Uint8Array;
  commitment: Uint8Array;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const text = (value: unknown): string => (typeof value === 'string' ? value : refuse());

const bytes = (value: unknown, decode: (s: string) => Uint8Array | undefined): Uint8Array =>
  decode(text(value)) ?? refuse();

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseProtectedHeader(encoded: string): Record<string, string> {
  if (encoded.length > MAX_PROTECTED_CHARS) refuse();
  const decoded = decodeBase64Url(encoded);
  if (decoded === undefined || decoded.length === 0) refuse();
  let header: unknown;
  try {
    header = JSON.parse(utf8.decode(decoded));
  } catch {
    return refuse();
  }
  if (!isRecord(header)) refuse();
  for (const [name, value] of Object.entries(header)) {
    if (!HEADER_MEMBERS.has(name) || typeof value !== 'string') refuse();
  }
  return header as Record<string, string>;
}

function parseEpk(value: unknown): EphemeralPublicKey {
  if (!isRecord(value)) refuse();
  for (const name of Object.keys(value)) if (!EPK_MEMBERS.has(name)) refuse();
  if (value.kty !== 'EC' || value.crv !== 'P-256') refuse();
  for (const coordinate of [value.x, value.y]) {
    if (bytes(coordinate, decodeBase64Url).length !== P256_COORDINATE_BYTES) refuse();
  }
  return { kty: 'EC', crv: 'P-256', x: value.x as string, y: value.y as string };
}

/** Everything that can be checked before the key is used: the envelope is public, the caller holds it. */
function prepare(envelope: unknown): Prepared {
  if (!isRecord(envelope) || !isRecord(envelope.keyBundle)) refuse();
  const bundle = envelope.keyBundle;
  const encodedHeader = text(envelope.protected);
  const header = parseProtectedHeader(encodedHeader);
  if (header.enc !== CONTENT_ENCRYPTION) refuse();

  const algorithm = bundle.algorithm;
  if (!KEY_WRAP_ALGORITHMS.includes(algorithm as KeyWrapAlgorithm)) refuse();
  // Legacy envelopes fixed the (RSA) algorithm in the protected header; newer ones carry it per
  // recipient so that a claimed escrow receipt keeps its additional data.
  if (header.alg !== undefined && (header.alg !== LEGACY_ALGORITHM || algorithm !== header.alg)) refuse();

  for (const name of BOUND_NAMES) if (text(envelope[name]) !== header[name]) refuse();
  const commitment = bytes(header.keyCommitment, decodeBase64Url);
  if (commitment.length !== CEK_BYTES) refuse();

  let epk: EphemeralPublicKey | undefined;
  if (algorithm === 'ECDH-ES+A256KW') epk = parseEpk(bundle.epk);
  else if (bundle.epk !== undefined) refuse();

  const encryptedKey = bytes(bundle.encryptedAesKey, decodeBase64);
  if (algorithm === 'ECDH-ES+A256KW' && encryptedKey.length !== AES_KW_WRAPPED_BYTES) refuse();
  const iv = bytes(envelope.iv, decodeBase64);
  if (iv.length !== IV_BYTES) refuse();
  const tag = bytes(envelope.authTag, decodeBase64);
  if (tag.length !== TAG_BYTES) refuse();
  const ciphertext = bytes(envelope.ciphertext, decodeBase64);
  const ciphertextAndTag = new Uint8Array(ciphertext.length + TAG_BYTES);
  ciphertextAndTag.set(ciphertext);
  ciphertextAndTag.set(tag, ciphertext.length);
  return {
    algorithm: algorithm as KeyWrapAlgorithm,
    // RFC 7516 §5.2 step 14: the additional data is the ASCII of the encoded protected header.
    aad: ascii.encode(encodedHeader),
    encryptedKey,
    epk,
    iv,
    ciphertextAndTag,
    commitment,
  };
}

/** The private key must be of the envelope's algorithm and inside the server's allow-list. */
function checkPrivateKey(key: unknown, prepared: Prepared): WebCryptoKey {
  if (!isRecord(key)) refuse();
  const privateKey = key as unknown as WebCryptoKey;
  const algorithm = privateKey.algorithm as unknown as KeyAlgorithmMembers;
  if (privateKey.type !== 'private') refuse();
  if (prepared.algorithm === 'RSA-OAEP-256') {
    const bits = algorithm.modulusLength ?? 0;
    if (algorithm.name !== 'RSA-OAEP' || algorithm.hash?.name !== 'SHA-256') refuse();
    if (bits < MIN_MODULUS_BITS || bits > MAX_MODULUS_BITS) refuse();
    if (prepared.encryptedKey.length !== Math.ceil(bits / 8)) refuse();
    if (!privateKey.usages.includes('decrypt') && !privateKey.usages.includes('unwrapKey')) refuse();
  } else {
    if (algorithm.name !== 'ECDH' || algorithm.namedCurve !== 'P-256') refuse();
    if (!privateKey.usages.includes('deriveBits')) refuse();
  }
  return privateKey;
}

const subtle = platformSubtle;

const uint32 = (value: number): Uint8Array =>
  new Uint8Array([(value >>> 24) & 0xff, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff]);

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * RFC 7518 §4.6.2: Concat KDF (NIST SP 800-56A) with SHA-256, AlgorithmID "ECDH-ES+A256KW", empty
 * PartyUInfo and PartyVInfo, keydatalen 256. 256 bits is one SHA-256 block of output: one round.
 */
async function concatKdf(sharedSecret: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  const input = concat(
    uint32(1),
    sharedSecret,
    uint32(ECDH_ALGORITHM_ID.length),
    ECDH_ALGORITHM_ID,
    uint32(0),
    uint32(0),
    uint32(CEK_BYTES * 8),
  );
  const derived = new Uint8Array(await subtle().digest('SHA-256', input));
  input.fill(0);
  return derived;
}

/** The CEK as the two keys it is used as: AES-256-GCM for the receipt, HMAC-SHA256 for the commitment. */
interface ContentKeys {
  aes: WebCryptoKey;
  hmac: WebCryptoKey;
}

const AES_GCM = { name: 'AES-GCM' } as const;
const HMAC_SHA256 = { name: 'HMAC', hash: 'SHA-256' } as const;

async function keysFromBytes(cek: Uint8Array<ArrayBuffer>): Promise<ContentKeys> {
  try {
    const [aes, hmac] = await Promise.all([
      subtle().importKey('raw', cek, AES_GCM, false, ['decrypt']),
      subtle().importKey('raw', cek, HMAC_SHA256, false, ['verify']),
    ]);
    return { aes, hmac };
  } finally {
    cek.fill(0);
  }
}

/** A random CEK: what a failed unwrap carries on with, so that it fails where a forgery fails. */
const randomKeys = (): Promise<ContentKeys> =>
  keysFromBytes(globalThis.crypto.getRandomValues(new Uint8Array(CEK_BYTES)));

async function unwrapEcdh(prepared: Prepared, privateKey: WebCryptoKey): Promise<ContentKeys> {
  const epk = prepared.epk ?? refuse();
  // importKey refuses a point that is not on P-256, so an invalid-curve epk never reaches ECDH.
  const ephemeral = await subtle().importKey(
    'jwk',
    { kty: 'EC', crv: 'P-256', x: epk.x, y: epk.y, ext: true },
    { name: 'ECDH', namedCurve: 'P-256' },
    true,
    [],
  );
  const shared = new Uint8Array(
    await subtle().deriveBits({ name: 'ECDH', public: ephemeral }, privateKey, CEK_BYTES * 8),
  );
  const kekBytes = await concatKdf(shared);
  shared.fill(0);
  const kek = await subtle().importKey('raw', kekBytes, 'AES-KW', false, ['unwrapKey']);
  kekBytes.fill(0);
  // Unwrapped straight into the two keys: the CEK never exists as bytes in script memory. A 40-byte
  // AES-KW input always unwraps to 32 bytes, so both are 256-bit keys.
  const wrapped = prepared.encryptedKey as Uint8Array<ArrayBuffer>;
  const [aes, hmac] = await Promise.all([
    subtle().unwrapKey('raw', wrapped, kek, 'AES-KW', AES_GCM, false, ['decrypt']),
    subtle().unwrapKey('raw', wrapped, kek, 'AES-KW', HMAC_SHA256, false, ['verify']),
  ]);
  return { aes, hmac };
}

async function unwrapRsa(prepared: Prepared, privateKey: WebCryptoKey): Promise<ContentKeys> {
  const wrapped = prepared.encryptedKey as Uint8Array<ArrayBuffer>;
  let cek: Uint8Array<ArrayBuffer>;
  if (privateKey.usages.includes('decrypt')) {
    cek = new Uint8Array(await subtle().decrypt({ name: 'RSA-OAEP' }, privateKey, wrapped));
  } else {
    // One RSA operation, not one per key: unwrapped once, extractable, and made into both keys.
    const unwrapped = await subtle().unwrapKey(
      'raw',
      wrapped,
      privateKey,
      { name: 'RSA-OAEP' },
      AES_GCM,
      true,
      ['decrypt'],
    );
    cek = new Uint8Array(await subtle().exportKey('raw', unwrapped));
  }
  if (cek.length !== CEK_BYTES) {
    cek.fill(0);
    return refuse();
  }
  return keysFromBytes(cek);
}

/**
 * RFC 7516 §11.5: a failed unwrap carries on with a random CEK, so that every failure after the
 * structural checks runs the commitment check and GCM and ends in the same place.
 */
async function decrypt(prepared: Prepared, privateKey: WebCryptoKey): Promise<Uint8Array> {
  let failed = false;
  let keys: ContentKeys;
  try {
    keys =
      prepared.algorithm === 'RSA-OAEP-256'
        ? await unwrapRsa(prepared, privateKey)
        : await unwrapEcdh(prepared, privateKey);
  } catch {
    failed = true;
    keys = await randomKeys();
  }
  const [committed, plaintext] = await Promise.all([
    // verify compares in constant time: the commitment pins exactly one CEK (a key-committing AEAD).
    subtle()
      .verify('HMAC', keys.hmac, prepared.commitment as Uint8Array<ArrayBuffer>, COMMITMENT_LABEL)
      .catch(() => false),
    subtle()
      .decrypt(
        {
          name: 'AES-GCM',
          iv: prepared.iv as Uint8Array<ArrayBuffer>,
          additionalData: prepared.aad as Uint8Array<ArrayBuffer>,
          tagLength: TAG_BYTES * 8,
        },
        keys.aes,
        prepared.ciphertextAndTag as Uint8Array<ArrayBuffer>,
      )
      .then((bytes) => new Uint8Array(bytes))
      .catch(() => undefined),
  ]);
  if (failed || !committed || plaintext === undefined) {
    plaintext?.fill(0);
    return refuse();
  }
  return plaintext;
}

/**
 * Opens an envelope and returns the plaintext bytes. Throws EnvelopeError, always the same, on any
 * failure. The envelope is checked member by member whatever its static type says: it came over the
 * network.
 */
export async function openEnvelopeBytes(envelope: Envelope, privateKey: WebCryptoKey): Promise<Uint8Array> {
  try {
    const prepared = prepare(envelope);
    return await decrypt(prepared, checkPrivateKey(privateKey, prepared));
  } catch {
    throw new EnvelopeError();
  }
}

/** Opens an envelope and parses the receipt JSON inside. Throws EnvelopeError on any failure. */
export async function openEnvelope<T = Record<string, unknown>>(
  envelope: Envelope,
  privateKey: WebCryptoKey,
): Promise<T> {
  const plaintext = await openEnvelopeBytes(envelope, privateKey);
  try {
    return JSON.parse(utf8.decode(plaintext)) as T;
  } catch {
    throw new EnvelopeError();
  } finally {
    plaintext.fill(0);
  }
}
