/**
 * "Invisible salamanders": GCM is not key-committing, so one ciphertext can be made to authenticate
 * under two keys. Build one for real, then show the envelope's key commitment refuses the second key.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { constants, createCipheriv, publicEncrypt, randomBytes } from 'node:crypto';
import { flattenedDecrypt } from 'jose';
import {
  aesGcmDecrypt,
  keyCommitment,
  openEnvelope,
  type SealedEnvelope,
} from '../../../lib/crypto/envelope.js';
import { asFlattenedJwe, bound, expectDecryptionError, testKeyPair, type TestKeyPair } from './support.js';

// GF(2^128) as GCM defines it: bit 0 of a block (the MSB of byte 0) is the coefficient of x^0.
const R = 0xe1n << 120n;
const ONE = 1n << 127n;

function gfMul(x: bigint, y: bigint): bigint {
  let z = 0n;
  let v = y;
  for (let i = 127n; i >= 0n; i--) {
    if ((x >> i) & 1n) z ^= v;
    v = v & 1n ? (v >> 1n) ^ R : v >> 1n;
  }
  return z;
}

function gfPow(x: bigint, exponent: bigint): bigint {
  let result = ONE;
  let base = x;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = gfMul(result, base);
    base = gfMul(base, base);
  }
  return result;
}

const gfInverse = (x: bigint): bigint => gfPow(x, (1n << 128n) - 2n);
const toBig = (block: Buffer): bigint => BigInt(`0x${block.toString('hex') || '0'}`);
const toBlock = (x: bigint): Buffer => Buffer.from(x.toString(16).padStart(32, '0'), 'hex');

function blocks(data: Buffer): bigint[] {
  const padded = Buffer.concat([data, Buffer.alloc((16 - (data.length % 16)) % 16)]);
  return Array.from({ length: padded.length / 16 }, (_, i) => toBig(padded.subarray(i * 16, i * 16 + 16)));
}

function ghash(h: bigint, aad: Buffer, ciphertext: Buffer): bigint {
  const lengths = Buffer.alloc(16);
  lengths.writeBigUInt64BE(BigInt(aad.length * 8), 0);
  lengths.writeBigUInt64BE(BigInt(ciphertext.length * 8), 8);
  return [...blocks(aad), ...blocks(ciphertext), toBig(lengths)].reduce((x, b) => gfMul(x ^ b, h), 0n);
}

const aesBlock = (key: Buffer, block: Buffer): Buffer =>
  createCipheriv('aes-256-ecb', key, null).setAutoPadding(false).update(block);

/** Three ciphertext blocks; the middle one is solved so the GHASH-based tags under k1 and k2 coincide. */
function twoKeyCiphertext(
  k1: Buffer,
  k2: Buffer,
  iv: Buffer,
  aad: Buffer,
): { ciphertext: Buffer; tag: Buffer } {
  const ciphertext = Buffer.concat([randomBytes(16), Buffer.alloc(16), randomBytes(16)]);
  const j0 = Buffer.concat([iv, Buffer.from([0, 0, 0, 1])]);
  const [h1, h2] = [k1, k2].map((k) => toBig(aesBlock(k, Buffer.alloc(16)))) as [bigint, bigint];
  const [e1, e2] = [k1, k2].map((k) => toBig(aesBlock(k, j0))) as [bigint, bigint];
  // The free block is followed by one ciphertext block and the length block, so it is multiplied by H^3.
  const s1 = ghash(h1, aad, ciphertext);
  const s2 = ghash(h2, aad, ciphertext);
  const free = gfMul(s1 ^ s2 ^ e1 ^ e2, gfInverse(gfPow(h1, 3n) ^ gfPow(h2, 3n)));
  toBlock(free).copy(ciphertext, 16);
  return { ciphertext, tag: toBlock(ghash(h1, aad, ciphertext) ^ e1) };
}

describe('key commitment', () => {
  let recipient: TestKeyPair;
  beforeAll(async () => {
    recipient = await testKeyPair();
  });

  it('the GF(2^128) arithmetic is right: x * x^-1 = 1', () => {
    const x = toBig(randomBytes(16));
    expect(gfMul(x, gfInverse(x))).toBe(ONE);
    expect(gfMul(x, ONE)).toBe(x);
  });

  it('a genuine two-key GCM ciphertext opens under both keys with plain AES-GCM, but only as its committed envelope', async () => {
    const [k1, k2, iv] = [randomBytes(32), randomBytes(32), randomBytes(12)];
    const header = {
      alg: 'RSA-OAEP-256',
      enc: 'A256GCM',
      ...bound,
      keyCommitment: keyCommitment(k1).toString('base64url'),
    };
    const protectedHeader = Buffer.from(JSON.stringify(header)).toString('base64url');
    const aad = Buffer.from(protectedHeader, 'ascii');
    const { ciphertext, tag } = twoKeyCiphertext(k1, k2, iv, aad);

    const p1 = aesGcmDecrypt(k1, iv, ciphertext, tag, aad);
    const p2 = aesGcmDecrypt(k2, iv, ciphertext, tag, aad);
    expect(p1).toHaveLength(48);
    expect(p1.equals(p2)).toBe(false);

    const envelopeFor = (cek: Buffer): SealedEnvelope => ({
      ...bound,
      keyId: 'k',
      keyBundle: {
        keyId: 'k',
        algorithm: 'RSA-OAEP-256',
        encryptedAesKey: publicEncrypt(
          { key: recipient.publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
          cek,
        ).toString('base64'),
      },
      ciphertext: ciphertext.toString('base64'),
      iv: iv.toString('base64'),
      authTag: tag.toString('base64'),
      protected: protectedHeader,
    });

    expect(openEnvelope(envelopeFor(k1), recipient.privateKey)).toEqual(p1);
    const refused = expectDecryptionError(() => openEnvelope(envelopeFor(k2), recipient.privateKey));
    expect(refused.reason).toBe('key commitment mismatch');

    // A plain JWE library has no such check: the same bytes open to a second plaintext.
    const forged = await flattenedDecrypt(asFlattenedJwe(envelopeFor(k2)), recipient.privateKey);
    expect(Buffer.from(forged.plaintext)).toEqual(p2);
  });
});
