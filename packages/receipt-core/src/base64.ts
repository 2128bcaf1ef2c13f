/**
 * Strict base64 without Buffer or atob, so the SDK runs wherever WebCrypto does. An envelope member
 * has exactly one accepted spelling, as on the server (lib/crypto/base64.ts): a string that is one of
 * several aliases of the same bytes (stray characters, non-zero padding bits) is refused.
 */

const STANDARD = /^[A-Za-z0-9+/]*={0,2}$/;
const URL_SAFE = /^[A-Za-z0-9_-]*$/;
const STANDARD_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** 6-bit value of a base64 or base64url character (both alphabets at once); the input is pre-checked. */
function sextet(code: number): number {
  if (code >= 65 && code <= 90) return code - 65;
  if (code >= 97 && code <= 122) return code - 71;
  if (code >= 48 && code <= 57) return code + 4;
  return code === 43 || code === 45 ? 62 : 63;
}

function unusedBitsClear(s: string, lastDataIndex: number, dataCharsInLastQuantum: number): boolean {
  if (dataCharsInLastQuantum === 0) return true;
  const mask = dataCharsInLastQuantum === 2 ? 0x0f : 0x03;
  return (sextet(s.charCodeAt(lastDataIndex)) & mask) === 0;
}

export function isCanonicalBase64(s: string): boolean {
  if (s.length % 4 !== 0 || !STANDARD.test(s)) return false;
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return unusedBitsClear(s, s.length - padding - 1, padding === 0 ? 0 : 4 - padding);
}

export function isCanonicalBase64Url(s: string): boolean {
  const rest = s.length % 4;
  if (rest === 1 || !URL_SAFE.test(s)) return false;
  return unusedBitsClear(s, s.length - 1, rest);
}

/** Decodes data characters only (no padding); the caller has checked the alphabet. */
function decodeChars(s: string, length: number): Uint8Array {
  const out = new Uint8Array(Math.floor((length * 6) / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (let i = 0; i < length; i++) {
    buffer = (buffer << 6) | sextet(s.charCodeAt(i));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (buffer >> bits) & 0xff;
    }
  }
  return out;
}

/** Decodes canonical standard base64, or returns undefined. */
export function decodeBase64(s: string): Uint8Array | undefined {
  if (!isCanonicalBase64(s)) return undefined;
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return decodeChars(s, s.length - padding);
}

/** Decodes canonical unpadded base64url, or returns undefined. */
export function decodeBase64Url(s: string): Uint8Array | undefined {
  return isCanonicalBase64Url(s) ? decodeChars(s, s.length) : undefined;
}

function encode(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + alphabet[(n >> 6) & 63]! + alphabet[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + (pad ? '==' : '');
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + alphabet[(n >> 6) & 63]! + (pad ? '=' : '');
  }
  return out;
}

export const encodeBase64 = (bytes: Uint8Array): string => encode(bytes, STANDARD_ALPHABET, true);
export const encodeBase64Url = (bytes: Uint8Array): string => encode(bytes, URL_ALPHABET, false);
