import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  decodeBase64,
  decodeBase64Url,
  isCanonicalBase64,
  isCanonicalBase64Url,
} from '../../../lib/crypto/base64.js';

/**
 * The canonical-spelling check decides which envelopes parse, so it is held to a second, independent
 * statement of the rule: the alphabet, the padding, and zero bits below the last whole byte.
 */
const STANDARD = /^[A-Za-z0-9+/]*={0,2}$/;
const URL_SAFE = /^[A-Za-z0-9_-]*$/;
const sextet = (code: number): number =>
  code >= 65 && code <= 90
    ? code - 65
    : code >= 97 && code <= 122
      ? code - 71
      : code >= 48 && code <= 57
        ? code + 4
        : code === 43 || code === 45
          ? 62
          : 63;
const bitsClear = (s: string, index: number, dataChars: number): boolean =>
  dataChars === 0 || (sextet(s.charCodeAt(index)) & (dataChars === 2 ? 0x0f : 0x03)) === 0;
const canonicalStandard = (s: string): boolean => {
  if (s.length % 4 !== 0 || !STANDARD.test(s)) return false;
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return bitsClear(s, s.length - padding - 1, padding === 0 ? 0 : 4 - padding);
};
const canonicalUrl = (s: string): boolean =>
  s.length % 4 !== 1 && URL_SAFE.test(s) && bitsClear(s, s.length - 1, s.length % 4);

const candidates = fc.oneof(
  fc
    .array(
      fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n.'.split('')),
      {
        maxLength: 24,
      },
    )
    .map((chars) => chars.join('')),
  fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes).toString('base64')),
  fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
  fc.string(),
);

describe('canonical base64', () => {
  it('accepts exactly the canonical spellings, standard and url-safe', () => {
    fc.assert(
      fc.property(candidates, (s) => {
        expect([s, isCanonicalBase64(s), isCanonicalBase64Url(s)]).toEqual([
          s,
          canonicalStandard(s),
          canonicalUrl(s),
        ]);
      }),
      { numRuns: 20_000 },
    );
  });

  it('refuses the aliases Buffer.from would quietly accept', () => {
    for (const alias of ['QQ', 'QR==', 'QQ==\n', 'Q Q==', 'QQ=', '-_8=', 'QUJD===='])
      expect(decodeBase64(alias)).toBeUndefined();
    for (const alias of ['QR', 'QQ==', '+/8', 'Q', 'Q Q']) expect(decodeBase64Url(alias)).toBeUndefined();
    expect(decodeBase64('QQ==')).toEqual(Buffer.from('A'));
    expect(decodeBase64Url('QQ')).toEqual(Buffer.from('A'));
    expect(decodeBase64('')).toEqual(Buffer.alloc(0));
  });
});
