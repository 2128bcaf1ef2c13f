/**
 * Device keys with WebCrypto. The private key is made non-extractable by default: it can open
 * envelopes on this device and cannot be read out by script, which is the point of decrypting on the
 * device (browsers keep such a CryptoKey in IndexedDB; native apps hold P-256 in secure hardware).
 */
import { decodeBase64, encodeBase64, subtle, type WebCryptoKey } from '@receipt-service/receipt-core';
import type { KeyWrapAlgorithm } from './envelope.js';

export interface DeviceKeyOptions {
  /** ECDH-ES+A256KW (P-256, the default: the curve secure enclaves hold) or RSA-OAEP-256 (2048-bit). */
  algorithm?: KeyWrapAlgorithm;
  /**
   * Only for the specification's server-side decrypt, which needs the private key sent as PKCS#8
   * (exportPrivateKey). A device that opens its own envelopes never needs it.
   */
  extractable?: boolean;
}

/** The public half as a JWK, members of the key only: what POST /api/v1/onboarding/keys also takes. */
// Type aliases, not interfaces: they satisfy the generated client's JWK index signature.
export type PublicJwk =
  { kty: 'EC'; crv: 'P-256'; x: string; y: string } | { kty: 'RSA'; n: string; e: string };

export interface DeviceKey {
  privateKey: WebCryptoKey;
  /** Base64 DER SubjectPublicKeyInfo: what POST /api/v1/onboarding/keys takes. */
  publicKey: string;
  publicJwk: PublicJwk;
  algorithm: KeyWrapAlgorithm;
}

const RSA_PARAMETERS = {
  name: 'RSA-OAEP',
  modulusLength: 2048,
  publicExponent: new Uint8Array([1, 0, 1]),
  hash: 'SHA-256',
};
const EC_PARAMETERS = { name: 'ECDH', namedCurve: 'P-256' };
// openEnvelope unwraps with decrypt (RSA) or deriveBits (ECDH); nothing else is granted.
const RSA_USAGES: ('decrypt' | 'unwrapKey')[] = ['decrypt', 'unwrapKey'];
const EC_USAGES: 'deriveBits'[] = ['deriveBits'];

/** Only the public members: WebCrypto's JWK export adds key_ops and ext, which the service does not need. */
function publicMembers(jwk: { kty?: string; x?: string; y?: string; n?: string; e?: string }): PublicJwk {
  if (jwk.kty === 'EC') return { kty: 'EC', crv: 'P-256', x: jwk.x!, y: jwk.y! };
  return { kty: 'RSA', n: jwk.n!, e: jwk.e! };
}

/** Makes a key pair for this device. */
export async function generateDeviceKey(options: DeviceKeyOptions = {}): Promise<DeviceKey> {
  const algorithm = options.algorithm ?? 'ECDH-ES+A256KW';
  const extractable = options.extractable ?? false;
  if (algorithm !== 'ECDH-ES+A256KW' && algorithm !== 'RSA-OAEP-256') {
    throw new TypeError(`algorithm must be ECDH-ES+A256KW or RSA-OAEP-256, not ${String(algorithm)}`);
  }
  const pair =
    algorithm === 'ECDH-ES+A256KW'
      ? await subtle().generateKey(EC_PARAMETERS, extractable, EC_USAGES)
      : await subtle().generateKey(RSA_PARAMETERS, extractable, RSA_USAGES);
  const [spki, jwk] = await Promise.all([
    subtle().exportKey('spki', pair.publicKey),
    subtle().exportKey('jwk', pair.publicKey),
  ]);
  return {
    privateKey: pair.privateKey,
    publicKey: encodeBase64(new Uint8Array(spki)),
    publicJwk: publicMembers(jwk),
    algorithm,
  };
}

/** Base64 DER PKCS#8 of an extractable private key: the form receipts/decrypt and payments/decrypt take. */
export async function exportPrivateKey(privateKey: WebCryptoKey): Promise<string> {
  return encodeBase64(new Uint8Array(await subtle().exportKey('pkcs8', privateKey)));
}

const PEM = /^-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\s]+)-----END PRIVATE KEY-----\s*$/;

/**
 * Imports a PKCS#8 private key (base64 DER, or PEM "PRIVATE KEY"), such as the one
 * POST /api/v1/onboarding/generate-keys returns, for openEnvelope. RSA keys are imported for
 * RSA-OAEP-256, P-256 keys for ECDH-ES+A256KW.
 */
export async function importPrivateKey(
  pkcs8: string,
  options: { extractable?: boolean } = {},
): Promise<{ privateKey: WebCryptoKey; algorithm: KeyWrapAlgorithm }> {
  const pem = PEM.exec(pkcs8.trim());
  const der = decodeBase64(pem ? pem[1]!.replace(/\s+/g, '') : pkcs8.trim());
  if (der === undefined)
    throw new TypeError('private key is neither base64 DER PKCS#8 nor a PEM PRIVATE KEY');
  const extractable = options.extractable ?? false;
  const data = der as Uint8Array<ArrayBuffer>;
  try {
    const privateKey = await subtle().importKey('pkcs8', data, RSA_PARAMETERS, extractable, RSA_USAGES);
    return { privateKey, algorithm: 'RSA-OAEP-256' };
  } catch {
    // Not an RSA key: the only other recipient key type is P-256.
  }
  try {
    const privateKey = await subtle().importKey('pkcs8', data, EC_PARAMETERS, extractable, EC_USAGES);
    return { privateKey, algorithm: 'ECDH-ES+A256KW' };
  } catch {
    throw new TypeError('private key is neither an RSA key nor a P-256 key');
  } finally {
    der.fill(0);
  }
}
