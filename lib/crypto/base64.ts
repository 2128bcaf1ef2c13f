/**
 * Strict base64 decoding. Buffer.from(s, 'base64') skips characters it does not know and ignores
 * non-zero padding bits, so many strings decode to the same bytes; envelopes must have exactly one
 * spelling, so anything but the canonical encoding is refused.
 */

const STANDARD = /^[A-Za-z0-9+/]*={0,2}$/;
const URL_SAFE = /^[A-Za-z0-9_-]*$/;

/** 6-bit value of a base64 or base64url character (both alphabets at once). */
function sextet(code: number): number {
  if (code >= 65 && code <= 90) return code - 65; // A-Z
  if (code >= 97 && code <= 122) return code - 71; // a-z
  if (code >= 48 && code <= 57) return code + 4; // 0-9
  return code === 43 || code === 45 ? 62 : 63; // + or -, / or _
}

/** The bits below the last whole byte must be zero, else the string is one of several aliases. */
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

/** Decodes canonical standard base64, or returns undefined. */
export function decodeBase64(s: string): Buffer | undefined {
  return isCanonicalBase64(s) ? Buffer.from(s, 'base64') : undefined;
}

/** Decodes canonical unpadded base64url, or returns undefined. */
export function decodeBase64Url(s: string): Buffer | undefined {
  return isCanonicalBase64Url(s) ? Buffer.from(s, 'base64url') : undefined;
}
