import { expect } from '@jest/globals';
import type { KeyObject } from 'node:crypto';
import { DecryptionError } from '../../../lib/crypto/errors.js';
import { toFlattenedJwe, type FlattenedJwe, type SealedEnvelope } from '../../../lib/crypto/envelope.js';
import { generateRsaKeyPair, parsePrivateKey, parsePublicKey } from '../../../lib/crypto/keys.js';

/** The one public message every decryption failure must carry. */
export const DECRYPTION_MESSAGE = new DecryptionError('any').message;

function asDecryptionError(error: unknown): DecryptionError {
  expect(error).toBeInstanceOf(DecryptionError);
  const failure = error as DecryptionError;
  expect(failure.message).toBe(DECRYPTION_MESSAGE);
  expect(failure.code).toBe('DECRYPTION_ERROR');
  expect(failure.reason.length).toBeGreaterThan(0);
  return failure;
}

export function expectDecryptionError(run: () => unknown): DecryptionError {
  try {
    run();
  } catch (error) {
    return asDecryptionError(error);
  }
  throw new Error('expected a DecryptionError, but the call succeeded');
}

export async function expectDecryptionRejection(run: () => Promise<unknown>): Promise<DecryptionError> {
  try {
    await run();
  } catch (error) {
    return asDecryptionError(error);
  }
  throw new Error('expected a DecryptionError, but the call succeeded');
}

export interface TestKeyPair {
  publicKeyText: string;
  privateKeyText: string;
  publicKey: KeyObject;
  privateKey: KeyObject;
}

export async function testKeyPair(): Promise<TestKeyPair> {
  const { publicKey, privateKey } = await generateRsaKeyPair();
  return {
    publicKeyText: publicKey,
    privateKeyText: privateKey,
    publicKey: parsePublicKey(publicKey),
    privateKey: parsePrivateKey(privateKey),
  };
}

export const bound = {
  version: '1.0',
  receiptId: '6f1c2f9e-3b0e-4c55-9d1a-2f7d4e0b9a11',
  merchantId: '0b8e2a44-8f31-4d3c-a2f4-6c1f1d7e5b22',
  transactionId: 'c3d9e8f7-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
};

/** The envelope in RFC 7516 flattened JSON form, as any JOSE library expects it. */
export function asFlattenedJwe(envelope: SealedEnvelope): FlattenedJwe {
  return toFlattenedJwe(envelope);
}

/** Flips one bit of the bytes a base64 (or base64url) string encodes and re-encodes canonically. */
export function flipBit(encoded: string, bit: number, encoding: 'base64' | 'base64url' = 'base64'): string {
  const bytes = Buffer.from(encoded, encoding);
  bytes[bit >> 3]! ^= 0x80 >> (bit & 7);
  return bytes.toString(encoding);
}

/** Bit positions to try: all of a short field, every `stride`-th plus the first and last byte of a long one. */
export function bitPositions(byteLength: number, stride: number): number[] {
  const bits = byteLength * 8;
  if (bits <= 512) return Array.from({ length: bits }, (_, i) => i);
  const positions = new Set<number>();
  for (let i = 0; i < 8; i++) positions.add(i).add(bits - 8 + i);
  for (let i = 0; i < bits; i += stride) positions.add(i);
  return [...positions];
}
