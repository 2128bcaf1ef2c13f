/**
 * Strict base64 decoding. Buffer.from(s, 'base64') skips characters it does not know and ignores
 * non-zero padding bits, so many strings decode to the same bytes; envelopes must have exactly one
 * spelling, so anything but the canonical encoding is refused.
 *
 * A string is canonical exactly when encoding what it decodes to gives it back: any character out of
 * the alphabet, missing or extra padding, or a non-zero bit below the last whole byte makes the round
 * trip differ. Both directions are native; a regular expression over a receipt-sized ciphertext cost
 * five times as much.
 */

export function isCanonicalBase64(s: string): boolean {
  return decodeBase64(s) !== undefined;
}

export function isCanonicalBase64Url(s: string): boolean {
  return decodeBase64Url(s) !== undefined;
}

/** Decodes canonical standard base64, or returns undefined. */
export function decodeBase64(s: string): Buffer | undefined {
  const bytes = Buffer.from(s, 'base64');
  return bytes.toString('base64') === s ? bytes : undefined;
}

/** Decodes canonical unpadded base64url, or returns undefined. */
export function decodeBase64Url(s: string): Buffer | undefined {
  const bytes = Buffer.from(s, 'base64url');
  return bytes.toString('base64url') === s ? bytes : undefined;
}
