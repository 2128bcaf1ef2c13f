import { createPrivateKey, type JsonWebKey, type KeyObject } from 'node:crypto';

/**
 * Every private key a request or response body holds, in any form node:crypto can read: a JWK with
 * its private members, PEM (PKCS#8, PKCS#1, SEC1), or base64/base64url DER of the same, as a JSON
 * value anywhere in the body, inside a JSON string, or in raw text. Candidates are parsed with
 * createPrivateKey, not matched by pattern, so a key counts whatever its label or prefix, and a
 * public key or random base64 does not.
 */
export function privateKeysIn(text: string): KeyObject[] {
  const found: KeyObject[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string') {
      found.push(...keysInText(value));
      const nested = parseJson(value);
      if (nested !== undefined && typeof nested === 'object') visit(nested);
    } else if (Array.isArray(value)) {
      value.forEach(visit);
    } else if (typeof value === 'object' && value !== null) {
      const jwk = fromJwk(value);
      if (jwk) found.push(jwk);
      Object.values(value).forEach(visit);
    }
  };
  const parsed = parseJson(text);
  if (parsed === undefined) found.push(...keysInText(text));
  else visit(parsed);
  return unique(found);
}

/** The same key in whatever form it was found: its PKCS#8 DER, base64. */
export const keyFingerprint = (key: KeyObject): string =>
  key.export({ format: 'der', type: 'pkcs8' }).toString('base64');

const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]+-----[\s\S]*?-----END [A-Z0-9 ]+-----/g;
/** base64 or base64url runs long enough to be DER of the smallest private key (Ed25519 PKCS#8: 48 bytes). */
const BASE64_RUN = /[A-Za-z0-9+/_-]{60,}={0,2}/g;
const DER_TYPES = ['pkcs8', 'pkcs1', 'sec1'] as const;

function keysInText(text: string): KeyObject[] {
  const keys: KeyObject[] = [];
  for (const [block] of text.matchAll(PEM_BLOCK)) {
    const key = attempt(() => createPrivateKey(block));
    if (key) keys.push(key);
  }
  for (const [run] of text.replace(PEM_BLOCK, ' ').matchAll(BASE64_RUN)) {
    // Node's base64 decoder reads both alphabets.
    const der = Buffer.from(run, 'base64');
    for (const type of DER_TYPES) {
      const key = attempt(() => createPrivateKey({ key: der, format: 'der', type }));
      if (key) {
        keys.push(key);
        break;
      }
    }
  }
  return keys;
}

function fromJwk(value: object): KeyObject | undefined {
  if (typeof (value as { kty?: unknown }).kty !== 'string') return undefined;
  return attempt(() => createPrivateKey({ key: value as JsonWebKey, format: 'jwk' }));
}

function attempt(read: () => KeyObject): KeyObject | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function unique(keys: KeyObject[]): KeyObject[] {
  return [...new Map(keys.map((key) => [keyFingerprint(key), key])).values()];
}
