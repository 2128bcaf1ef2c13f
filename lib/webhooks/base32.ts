const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base32, lower case and unpadded: the alphabet of webhook and delivery ids. */
export function base32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    // Only the bits not yet written are kept, so the value never outgrows 32 bits.
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}
