import { generateKeyPairSync, randomBytes } from 'node:crypto';

/**
 * Tamper cases for receipt envelopes, shared by the server's tests (test/adversarial/tamper.test.ts)
 * and the SDK's (test/sdk): each changes one thing about an envelope of either layout and either key
 * type. Most must make it refused; a few change nothing the format protects (ids outside the header)
 * and must still open in the crypto layer. Whatever the server's openEnvelope decides for a case, the
 * SDK must decide the same, and over HTTP every refusal is the uniform 403 (or a 400 for a body the
 * request schema already refuses).
 */

export type Json = Record<string, unknown>;
export interface TamperCase {
  name: string;
  mutate(envelope: Json): Json;
}

const clone = (envelope: Json): Json => JSON.parse(JSON.stringify(envelope)) as Json;
const bundleOf = (envelope: Json): Json => envelope.keyBundle as Json;

/** Flips one bit of what a standard base64 (or base64url) field encodes, re-encoded canonically. */
function flip(value: string, bit: number, encoding: 'base64' | 'base64url' = 'base64'): string {
  const bytes = Buffer.from(value, encoding);
  const index = Math.floor(bit / 8) % bytes.length;
  bytes[index] = bytes[index]! ^ (1 << (bit % 8));
  return bytes.toString(encoding);
}
const reencode = (value: string, change: (bytes: Buffer) => Buffer): string =>
  change(Buffer.from(value, 'base64')).toString('base64');

const headerOf = (envelope: Json): Json =>
  JSON.parse(Buffer.from(envelope.protected as string, 'base64url').toString('utf8')) as Json;
const withHeader = (envelope: Json, change: (header: Json) => Json): Json => ({
  ...envelope,
  protected: Buffer.from(JSON.stringify(change(headerOf(envelope))), 'utf8').toString('base64url'),
});

/** A point that is not on P-256: the epk's y plus one. */
function offCurve(y: string): string {
  const bytes = Buffer.from(y, 'base64url');
  bytes[31] = (bytes[31]! + 1) & 0xff;
  return bytes.toString('base64url');
}

const field =
  (name: string, change: (value: string) => string): TamperCase['mutate'] =>
  (envelope) => {
    const copy = clone(envelope);
    copy[name] = change(copy[name] as string);
    return copy;
  };
const bundleField =
  (name: string, change: (value: unknown) => unknown): TamperCase['mutate'] =>
  (envelope) => {
    const copy = clone(envelope);
    const bundle = bundleOf(copy);
    const value = change(bundle[name]);
    if (value === undefined) delete bundle[name];
    else bundle[name] = value;
    return copy;
  };

const freshP256Epk = (): Json => {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
};

export const tamperCases: TamperCase[] = [
  // Changes outside what the format binds: both must still open.
  { name: 'envelope keyId changed (not bound)', mutate: field('keyId', () => 'another-key') },
  { name: 'keyBundle keyId changed (not bound)', mutate: bundleField('keyId', () => 'another-key') },
  {
    name: 'unknown envelope member added',
    mutate: (e) => ({ ...clone(e), createdAt: '2026-01-01T00:00:00Z' }),
  },
  // Ciphertext, iv, tag and wrapped key.
  ...[0, 7, 100].map((bit) => ({
    name: `ciphertext bit ${bit} flipped`,
    mutate: field('ciphertext', (v) => flip(v, bit)),
  })),
  {
    name: 'ciphertext truncated by a byte',
    mutate: field('ciphertext', (v) => reencode(v, (b) => b.subarray(0, -1))),
  },
  {
    name: 'ciphertext extended by a byte',
    mutate: field('ciphertext', (v) => reencode(v, (b) => Buffer.concat([b, Buffer.from([0])]))),
  },
  { name: 'ciphertext emptied', mutate: field('ciphertext', () => '') },
  { name: 'tag not canonical base64 (padding bits set)', mutate: field('authTag', (v) => nonCanonical(v)) },
  {
    name: 'ciphertext with a line break',
    mutate: field('ciphertext', (v) => `${v.slice(0, 4)}\n${v.slice(4)}`),
  },
  {
    name: 'ciphertext in base64url',
    mutate: field('ciphertext', (v) => Buffer.from(v, 'base64').toString('base64url')),
  },
  ...[0, 95].map((bit) => ({ name: `iv bit ${bit} flipped`, mutate: field('iv', (v) => flip(v, bit)) })),
  {
    name: 'iv of 16 bytes',
    mutate: field('iv', (v) => reencode(v, (b) => Buffer.concat([b, b.subarray(0, 4)]))),
  },
  { name: 'iv of 8 bytes', mutate: field('iv', (v) => reencode(v, (b) => b.subarray(0, 8))) },
  ...[0, 127].map((bit) => ({
    name: `tag bit ${bit} flipped`,
    mutate: field('authTag', (v) => flip(v, bit)),
  })),
  {
    name: 'tag truncated to 12 bytes',
    mutate: field('authTag', (v) => reencode(v, (b) => b.subarray(0, 12))),
  },
  { name: 'tag missing', mutate: field('authTag', () => undefined as unknown as string) },
  ...[0, 200, 319].map((bit) => ({
    name: `wrapped key bit ${bit} flipped`,
    mutate: bundleField('encryptedAesKey', (v) => flip(v as string, bit)),
  })),
  {
    name: 'wrapped key truncated',
    mutate: bundleField('encryptedAesKey', (v) => reencode(v as string, (b) => b.subarray(1))),
  },
  { name: 'wrapped key emptied', mutate: bundleField('encryptedAesKey', () => '') },
  // Bound fields.
  { name: 'receiptId changed', mutate: field('receiptId', () => '00000000-0000-4000-8000-000000000000') },
  { name: 'merchantId changed', mutate: field('merchantId', () => '00000000-0000-4000-8000-000000000000') },
  {
    name: 'transactionId changed',
    mutate: field('transactionId', () => '00000000-0000-4000-8000-000000000000'),
  },
  { name: 'version changed', mutate: field('version', () => '2.0') },
  {
    name: 'receiptId changed in the envelope and the header alike',
    mutate: (e) => withHeader(field('receiptId', () => 'r2')(e), (h) => ({ ...h, receiptId: 'r2' })),
  },
  // The protected header.
  { name: 'header member zip added', mutate: (e) => withHeader(e, (h) => ({ ...h, zip: 'DEF' })) },
  { name: 'header member crit added', mutate: (e) => withHeader(e, (h) => ({ ...h, crit: ['exp'] })) },
  {
    name: 'header member jku added',
    mutate: (e) => withHeader(e, (h) => ({ ...h, jku: 'https://attacker.example/keys' })),
  },
  { name: 'header member epk added', mutate: (e) => withHeader(e, (h) => ({ ...h, epk: freshP256Epk() })) },
  { name: 'header enc A128GCM', mutate: (e) => withHeader(e, (h) => ({ ...h, enc: 'A128GCM' })) },
  { name: 'header enc removed', mutate: (e) => withHeader(e, ({ enc: _enc, ...h }) => h) },
  { name: 'header alg dir', mutate: (e) => withHeader(e, (h) => ({ ...h, alg: 'dir' })) },
  { name: 'header alg none', mutate: (e) => withHeader(e, (h) => ({ ...h, alg: 'none' })) },
  {
    name: 'header alg RSA-OAEP-256 (made legacy)',
    mutate: (e) => withHeader(e, (h) => ({ ...h, alg: 'RSA-OAEP-256' })),
  },
  {
    name: 'header alg ECDH-ES+A256KW',
    mutate: (e) => withHeader(e, (h) => ({ ...h, alg: 'ECDH-ES+A256KW' })),
  },
  { name: 'header alg removed', mutate: (e) => withHeader(e, ({ alg: _alg, ...h }) => h) },
  { name: 'header keyCommitment removed', mutate: (e) => withHeader(e, ({ keyCommitment: _c, ...h }) => h) },
  {
    name: 'header keyCommitment of another key',
    mutate: (e) => withHeader(e, (h) => ({ ...h, keyCommitment: randomBytes(32).toString('base64url') })),
  },
  {
    name: 'header keyCommitment of 16 bytes',
    mutate: (e) => withHeader(e, (h) => ({ ...h, keyCommitment: randomBytes(16).toString('base64url') })),
  },
  {
    name: 'header keyCommitment a number',
    mutate: (e) => withHeader(e, (h) => ({ ...h, keyCommitment: 42 })),
  },
  { name: 'header receiptId a number', mutate: (e) => withHeader(e, (h) => ({ ...h, receiptId: 42 })) },
  {
    name: 'header re-serialised with other spacing',
    mutate: (e) => ({
      ...e,
      protected: Buffer.from(JSON.stringify(headerOf(e), null, 1)).toString('base64url'),
    }),
  },
  { name: 'header an array', mutate: (e) => ({ ...e, protected: Buffer.from('[]').toString('base64url') }) },
  {
    name: 'header not JSON',
    mutate: (e) => ({ ...e, protected: Buffer.from('{"enc":').toString('base64url') }),
  },
  {
    name: 'header not UTF-8',
    mutate: (e) => ({ ...e, protected: Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url') }),
  },
  {
    name: 'header padded',
    mutate: field('protected', (v) => `${v}${'='.repeat((4 - (v.length % 4)) % 4 || 4)}`),
  },
  {
    name: 'header in standard base64',
    mutate: field('protected', (v) => Buffer.from(v, 'base64url').toString('base64')),
  },
  { name: 'header emptied', mutate: field('protected', () => '') },
  { name: 'header 5000 characters', mutate: field('protected', () => 'e'.repeat(5000)) },
  // The key bundle.
  {
    name: 'algorithm switched to the other one',
    mutate: bundleField('algorithm', (v) => (v === 'RSA-OAEP-256' ? 'ECDH-ES+A256KW' : 'RSA-OAEP-256')),
  },
  { name: 'algorithm RSA1_5', mutate: bundleField('algorithm', () => 'RSA1_5') },
  { name: 'algorithm dir', mutate: bundleField('algorithm', () => 'dir') },
  { name: 'algorithm ECDH-ES (direct)', mutate: bundleField('algorithm', () => 'ECDH-ES') },
  { name: 'algorithm removed', mutate: bundleField('algorithm', () => undefined) },
  { name: 'epk removed', mutate: bundleField('epk', () => undefined) },
  { name: 'epk of another ephemeral key', mutate: bundleField('epk', () => freshP256Epk()) },
  {
    name: 'epk with a private member d',
    mutate: bundleField('epk', (v) =>
      v ? { ...(v as Json), d: (v as Json).x } : { ...freshP256Epk(), d: 'AAAA' },
    ),
  },
  {
    name: 'epk on P-384',
    mutate: bundleField('epk', (v) => ({ ...((v as Json | undefined) ?? freshP256Epk()), crv: 'P-384' })),
  },
  {
    name: 'epk kty OKP',
    mutate: bundleField('epk', (v) => ({ ...((v as Json | undefined) ?? freshP256Epk()), kty: 'OKP' })),
  },
  {
    name: 'epk off the curve',
    mutate: bundleField('epk', (v) => {
      const epk = (v as Json | undefined) ?? freshP256Epk();
      return { ...epk, y: offCurve(epk.y as string) };
    }),
  },
  {
    name: 'epk coordinates swapped',
    mutate: bundleField('epk', (v) => {
      const epk = (v as Json | undefined) ?? freshP256Epk();
      return { ...epk, x: epk.y, y: epk.x };
    }),
  },
  {
    name: 'epk x of 31 bytes',
    mutate: bundleField('epk', (v) => {
      const epk = (v as Json | undefined) ?? freshP256Epk();
      return {
        ...epk,
        x: Buffer.from(epk.x as string, 'base64url')
          .subarray(1)
          .toString('base64url'),
      };
    }),
  },
  { name: 'epk a string', mutate: bundleField('epk', () => 'epk') },
  {
    name: 'keyBundle removed',
    mutate: (e) => {
      const { keyBundle: _b, ...rest } = clone(e);
      return rest;
    },
  },
  { name: 'keyBundle an array', mutate: (e) => ({ ...clone(e), keyBundle: [] }) },
  // Whole envelope.
  { name: 'envelope is null', mutate: () => null as unknown as Json },
  { name: 'envelope is a string', mutate: (e) => JSON.stringify(e) as unknown as Json },
];

/**
 * The same bytes spelt with non-zero padding bits: Buffer decodes it, a canonical decoder must not.
 * For a padded value (the 16-byte tag always is).
 */
function nonCanonical(value: string): string {
  const padding = value.endsWith('==') ? 2 : 1;
  const index = value.length - padding - 1;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const next = alphabet[(alphabet.indexOf(value[index]!) + 1) % 64]!;
  return value.slice(0, index) + next + value.slice(index + 1);
}
