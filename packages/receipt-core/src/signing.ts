/**
 * Merchant-signed receipts (docs/ENVELOPE.md, "The merchant's signature"): a till signs the exact
 * DigitalReceipt the service will seal, the service checks the signature before it charges or stores
 * anything and seals it inside the receipt as `merchantSignature: { kid, jws }`, and the cardholder's
 * device checks it without trusting the service.
 *
 * What is signed: the receipt without its `merchantSignature` member, as RFC 8785 (JCS) canonical
 * JSON, UTF-8. How: a JWS (RFC 7515) with that payload detached, compact form
 * `<protected>..<signature>`, the protected header holding `alg` (EdDSA over Ed25519, or ES256 over
 * P-256) and `kid`, the key's RFC 7638 thumbprint. WebCrypto does the signing and the checking.
 */
import canonicalize from 'canonicalize';
import { sha256 } from '@noble/hashes/sha2.js';
import { decodeBase64Url, encodeBase64Url, isCanonicalBase64Url } from './base64.js';
import { subtle, type WebCryptoKey } from './webcrypto.js';
import { KeyLogError, verifyKeyInLog, type KeyLogEvidence, type TreeHead } from './key-log.js';

export type SigningAlgorithm = 'EdDSA' | 'ES256';
export const SIGNING_ALGORITHMS: readonly SigningAlgorithm[] = ['EdDSA', 'ES256'];

/** A merchant signing key's public half, its members only (what POST /merchants/signing-keys takes). */
export type SigningPublicJwk =
  { kty: 'OKP'; crv: 'Ed25519'; x: string } | { kty: 'EC'; crv: 'P-256'; x: string; y: string };

export interface MerchantSignature {
  /** The signing key: its RFC 7638 thumbprint (GET /api/v1/merchant-keys/{kid}). */
  kid: string;
  /** Compact JWS, payload detached: `<protected>..<signature>`. */
  jws: string;
}

/** A receipt as far as signing goes: any JSON object; `merchantSignature` is not part of what is signed. */
export type SignableReceipt = { merchantSignature?: MerchantSignature | undefined } & object;

/** Why a signature was refused; `reason` is stable, the message says it in words. */
export type SignatureProblem =
  | 'unsigned'
  | 'malformed'
  | 'attached_payload'
  | 'algorithm'
  | 'kid_mismatch'
  | 'key'
  | 'not_canonical'
  | 'mismatch'
  | 'not_logged';

export class ReceiptSignatureError extends Error {
  readonly reason: SignatureProblem;
  constructor(reason: SignatureProblem, message: string) {
    super(message);
    this.name = 'ReceiptSignatureError';
    this.reason = reason;
  }
}

const ascii = (text: string): Uint8Array<ArrayBuffer> => new TextEncoder().encode(text);

const ALGORITHM_OF_KEY: Record<string, SigningAlgorithm> = { 'OKP/Ed25519': 'EdDSA', 'EC/P-256': 'ES256' };
const WEBCRYPTO: Record<SigningAlgorithm, { name: string; namedCurve?: string; hash?: string }> = {
  EdDSA: { name: 'Ed25519' },
  ES256: { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' },
};

/**
 * RFC 8785 (JCS) canonical JSON of `value`: members sorted by UTF-16 code units, no whitespace,
 * numbers and strings as ECMAScript writes them, a member whose value is undefined left out (as
 * JSON.stringify does). Throws ReceiptSignatureError('not_canonical') for what JSON cannot hold (a
 * lone surrogate, NaN, Infinity).
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (error) {
    throw new ReceiptSignatureError(
      'not_canonical',
      `The receipt has no RFC 8785 form: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (text === undefined) throw new ReceiptSignatureError('not_canonical', 'The receipt is not JSON');
  return text;
}

/**
 * The bytes a merchant's signature covers: `receipt` less `merchantSignature`, less
 * `cardTransaction` (the network's references, which the service seals after the charge the merchant
 * signed before) and less `receiptCredential` (the merchant's SD-JWT VC of the receipt, signed by its own
 * key), as RFC 8785 canonical JSON (canonicalJson) in UTF-8.
 */
export function signedReceiptBytes(
  receipt: SignableReceipt & { cardTransaction?: unknown; receiptCredential?: unknown },
): Uint8Array<ArrayBuffer> {
  const {
    merchantSignature: _signature,
    cardTransaction: _references,
    receiptCredential: _credential,
    ...signed
  } = receipt;
  return ascii(canonicalJson(signed));
}

/** The public members of a JWK, in the shape RFC 7638 hashes; TypeError for a key of another kind. */
export function signingPublicJwk(jwk: {
  kty?: string;
  crv?: string;
  x?: string;
  y?: string;
}): SigningPublicJwk {
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && typeof jwk.x === 'string') {
    return { kty: 'OKP', crv: 'Ed25519', x: jwk.x };
  }
  if (jwk.kty === 'EC' && jwk.crv === 'P-256' && typeof jwk.x === 'string' && typeof jwk.y === 'string') {
    return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
  }
  throw new TypeError('A merchant signing key is an Ed25519 (OKP) or P-256 (EC) public JWK');
}

/** The key's id: its RFC 7638 JWK thumbprint (SHA-256, base64url), as the service assigns it. */
export function signingKeyId(publicJwk: SigningPublicJwk): string {
  // RFC 7638: the required members only, sorted, no whitespace: what RFC 8785 writes for them.
  return encodeBase64Url(sha256(ascii(canonicalJson(signingPublicJwk(publicJwk)))));
}

export interface SigningKey {
  /** Signs receipts; not extractable unless asked for. */
  privateKey: WebCryptoKey;
  publicJwk: SigningPublicJwk;
  kid: string;
  algorithm: SigningAlgorithm;
}

/**
 * A merchant signing key made with WebCrypto: Ed25519 (EdDSA) where the platform has it, P-256
 * (ES256) everywhere. Register `publicJwk` with POST /api/v1/merchants/signing-keys.
 */
export async function generateSigningKey(
  options: { algorithm?: SigningAlgorithm; extractable?: boolean } = {},
): Promise<SigningKey> {
  const algorithm = options.algorithm ?? 'EdDSA';
  if (!SIGNING_ALGORITHMS.includes(algorithm)) {
    throw new TypeError(`algorithm must be EdDSA or ES256, not ${String(algorithm)}`);
  }
  const pair = (await subtle().generateKey(WEBCRYPTO[algorithm], options.extractable ?? false, [
    'sign',
    'verify',
  ])) as { privateKey: WebCryptoKey; publicKey: WebCryptoKey };
  const publicJwk = signingPublicJwk(
    (await subtle().exportKey('jwk', pair.publicKey)) as {
      kty?: string;
      crv?: string;
      x?: string;
      y?: string;
    },
  );
  return { privateKey: pair.privateKey, publicJwk, kid: signingKeyId(publicJwk), algorithm };
}

function algorithmOfPrivateKey(key: WebCryptoKey): SigningAlgorithm {
  const { name, namedCurve } = key.algorithm as { name: string; namedCurve?: string };
  if (name === 'Ed25519') return 'EdDSA';
  if (name === 'ECDSA' && namedCurve === 'P-256') return 'ES256';
  throw new TypeError(
    `A signing key is Ed25519 or ECDSA P-256, not ${name}${namedCurve ? ` ${namedCurve}` : ''}`,
  );
}

/**
 * Signs a receipt for a till: returns the compact detached JWS to send as the `Receipt-Signature`
 * header. `receipt` must be exactly what the service will seal: for a flattened request,
 * `toDigitalReceipt(body)` (with the body's transactionDate); for the nested form, its `receipt`.
 */
export async function signReceipt(
  receipt: SignableReceipt,
  privateKey: WebCryptoKey,
  kid: string,
): Promise<string> {
  const alg = algorithmOfPrivateKey(privateKey);
  const header = encodeBase64Url(ascii(JSON.stringify({ alg, kid })));
  const input = `${header}.${encodeBase64Url(signedReceiptBytes(receipt))}`;
  const signature = lowS(alg, new Uint8Array(await subtle().sign(WEBCRYPTO[alg], privateKey, ascii(input))));
  return `${header}..${encodeBase64Url(signature)}`;
}

/** P-256's group order n: an ES256 signature's s is given as min(s, n − s), the one form the service takes. */
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

function bigEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

/**
 * Whether an ES256 signature (r ‖ s, 64 bytes) is in high-S form (s > n/2): the twin of a valid
 * signature that verifiers refuse, so that each signature has one spelling. Any other length counts
 * as high-S (refused); an s of n or more is left for the verification itself to refuse.
 */
export function hasHighS(signature: Uint8Array): boolean {
  return signature.length !== 64 || bigEndian(signature.subarray(32)) > P256_N / 2n;
}

/** An ES256 signature (r ‖ s) in low-S form (s ≤ n/2); WebCrypto gives either form. */
export function lowS(alg: SigningAlgorithm, signature: Uint8Array): Uint8Array {
  if (alg !== 'ES256' || signature.length !== 64) return signature;
  const s = bigEndian(signature.subarray(32));
  if (s <= P256_N / 2n) return signature;
  const out = new Uint8Array(signature);
  let low = P256_N - s;
  for (let index = 63; index >= 32; index--) {
    out[index] = Number(low & 0xffn);
    low >>= 8n;
  }
  return out;
}

/**
 * A proof over a change to the merchant's own signing keys (POST /merchants/signing-keys `proof`, or
 * the Key-Change-Proof header): a compact JWS, payload attached, over the RFC 8785 JSON of
 * `statement` (`{ action: "register", clientId, kid, nonce }` signed by the new key, or
 * `{ action, clientId, target, nonce }` signed by an active key), the nonce from
 * POST /merchants/signing-keys/challenges.
 */
export async function signKeyProof(
  statement: { action: string; clientId: string; nonce: string; kid?: string; target?: string },
  privateKey: WebCryptoKey,
  kid: string,
): Promise<string> {
  const alg = algorithmOfPrivateKey(privateKey);
  const header = encodeBase64Url(ascii(JSON.stringify({ alg, kid })));
  const payload = encodeBase64Url(ascii(canonicalJson(statement)));
  const input = `${header}.${payload}`;
  const signature = lowS(alg, new Uint8Array(await subtle().sign(WEBCRYPTO[alg], privateKey, ascii(input))));
  return `${input}.${encodeBase64Url(signature)}`;
}

export interface ParsedSignature {
  alg: SigningAlgorithm;
  kid: string;
  protectedHeader: string;
  signature: Uint8Array;
}

/**
 * A compact detached JWS taken apart, with what this profile refuses named: an attached payload,
 * another `alg` (`none` included), no `kid`, a `b64` or `crit` header.
 */
export function parseSignature(jws: string): ParsedSignature {
  const parts = jws.split('.');
  if (parts.length !== 3) {
    throw new ReceiptSignatureError(
      'malformed',
      'The signature is not a compact JWS (<protected>..<signature>, three parts separated by dots)',
    );
  }
  const [protectedHeader, payload, signaturePart] = parts as [string, string, string];
  if (payload !== '') {
    throw new ReceiptSignatureError(
      'attached_payload',
      'The JWS carries its payload: send it detached (<protected>..<signature>), the receipt is the payload',
    );
  }
  const headerBytes = isCanonicalBase64Url(protectedHeader) ? decodeBase64Url(protectedHeader) : undefined;
  let header: unknown;
  try {
    header = headerBytes && JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch {
    header = undefined;
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) {
    throw new ReceiptSignatureError('malformed', 'The JWS protected header is not base64url JSON');
  }
  const { alg, kid, b64, crit } = header as Record<string, unknown>;
  if (alg !== 'EdDSA' && alg !== 'ES256') {
    throw new ReceiptSignatureError(
      'algorithm',
      `The JWS alg must be EdDSA or ES256, not ${typeof alg === 'string' ? alg : JSON.stringify(alg ?? null)}`,
    );
  }
  if (typeof kid !== 'string' || kid === '') {
    throw new ReceiptSignatureError('malformed', 'The JWS protected header has no kid');
  }
  if (b64 !== undefined || crit !== undefined) {
    throw new ReceiptSignatureError('malformed', 'The JWS protected header may not carry b64 or crit');
  }
  const signature = isCanonicalBase64Url(signaturePart) ? decodeBase64Url(signaturePart) : undefined;
  if (!signature || signature.length === 0) {
    throw new ReceiptSignatureError('malformed', 'The JWS signature is not base64url');
  }
  return { alg, kid, protectedHeader, signature };
}

/**
 * Checks a sealed receipt's merchant signature on the device, with the merchant's public key (from
 * GET /api/v1/merchant-keys/{kid}, or one the device already trusts). The key must be the one the
 * signature names: its thumbprint is the kid, so a directory cannot hand out another key under it.
 * Resolves to the kid and alg; throws ReceiptSignatureError naming what failed.
 */
export async function verifyReceiptSignature(
  receipt: SignableReceipt,
  publicJwk: { kty?: string; crv?: string; x?: string; y?: string },
  options: { keyLog?: KeyLogEvidence } = {},
): Promise<{ kid: string; alg: SigningAlgorithm; treeHead?: TreeHead }> {
  const sealed = receipt.merchantSignature;
  if (!sealed || typeof sealed.jws !== 'string' || typeof sealed.kid !== 'string') {
    throw new ReceiptSignatureError('unsigned', 'The receipt carries no merchantSignature');
  }
  const parsed = parseSignature(sealed.jws);
  if (parsed.kid !== sealed.kid) {
    throw new ReceiptSignatureError('kid_mismatch', 'The JWS kid is not the merchantSignature kid');
  }
  let key: SigningPublicJwk;
  try {
    key = signingPublicJwk(publicJwk);
  } catch (error) {
    throw new ReceiptSignatureError('key', (error as Error).message);
  }
  if (signingKeyId(key) !== parsed.kid) {
    throw new ReceiptSignatureError('key', `This public key is not ${parsed.kid}: its thumbprint differs`);
  }
  if (ALGORITHM_OF_KEY[`${key.kty}/${key.crv}`] !== parsed.alg) {
    throw new ReceiptSignatureError(
      'algorithm',
      `The JWS alg ${parsed.alg} is not the algorithm of a ${key.crv} key`,
    );
  }
  const input = ascii(`${parsed.protectedHeader}.${encodeBase64Url(signedReceiptBytes(receipt))}`);
  let valid = false;
  try {
    const imported = await subtle().importKey('jwk', key, WEBCRYPTO[parsed.alg], false, ['verify']);
    valid = await subtle().verify(WEBCRYPTO[parsed.alg], imported, new Uint8Array(parsed.signature), input);
  } catch {
    valid = false;
  }
  if (!valid) {
    throw new ReceiptSignatureError('mismatch', 'The merchant signature does not match this receipt');
  }
  if (!options.keyLog) return { kid: parsed.kid, alg: parsed.alg };
  // Demanded: the key is in the public log under a signed head that extends the one the device kept.
  try {
    const { treeHead } = await verifyKeyInLog(parsed.kid, key, options.keyLog);
    return { kid: parsed.kid, alg: parsed.alg, treeHead };
  } catch (error) {
    if (!(error instanceof KeyLogError)) throw error;
    throw new ReceiptSignatureError('not_logged', error.message);
  }
}
