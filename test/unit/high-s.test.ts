import { describe, expect, it } from '@jest/globals';
import { hasHighS, lowS } from '@receipt-service/receipt-core';
import { isHighS } from '../../lib/merchants/key-proofs.js';

/** P-256's group order, written out here rather than imported, so the test does not lean on the code. */
const N = BigInt('0x' + 'ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');

const signature = (r: bigint, s: bigint): Uint8Array =>
  Uint8Array.from(Buffer.from(r.toString(16).padStart(64, '0') + s.toString(16).padStart(64, '0'), 'hex'));

describe('high-S (one spelling per ES256 signature)', () => {
  it('puts the line at n/2: s = n/2 is low, s = n/2 + 1 is high', () => {
    expect(hasHighS(signature(1n, N / 2n))).toBe(false);
    expect(hasHighS(signature(1n, N / 2n + 1n))).toBe(true);
    expect(hasHighS(signature(N - 1n, 1n))).toBe(false);
  });

  it('counts an s of n or more, and any length but 64 bytes, as high-S (refused, never thrown)', () => {
    expect(hasHighS(signature(1n, N))).toBe(true);
    expect(hasHighS(signature(1n, 2n ** 256n - 1n))).toBe(true);
    expect(hasHighS(new Uint8Array(63))).toBe(true);
    expect(hasHighS(new Uint8Array(65))).toBe(true);
    expect(() => isHighS('ES256', signature(0n, 0n))).not.toThrow();
  });

  it('applies to ES256 only', () => {
    expect(isHighS('EdDSA', new Uint8Array(64).fill(0xff))).toBe(false);
    expect(isHighS('ES256', new Uint8Array(64).fill(0xff))).toBe(true);
  });

  it('lowS gives the low twin, which hasHighS accepts', () => {
    const high = signature(5n, N - 7n);
    const low = lowS('ES256', high);
    expect(Buffer.from(low).toString('hex')).toBe(Buffer.from(signature(5n, 7n)).toString('hex'));
    expect(hasHighS(low)).toBe(false);
    expect(lowS('ES256', low)).toBe(low);
  });
});
