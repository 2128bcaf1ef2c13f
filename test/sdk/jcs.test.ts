import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { canonicalJson, signedReceiptBytes } from '@receipt-service/sdk';

/**
 * The SDK's canonical JSON (RFC 8785, from the `canonicalize` package by the RFC's authors) against
 * the RFC authors' own test vectors (test/vendor/rfc8785/README.md): the documents, the number
 * samples, and the first 10,000 lines of the ES6 number test file, generated here and hashed.
 */
const vectors = join(import.meta.dirname, '..', 'vendor', 'rfc8785');
const canonical = (value: unknown): string => canonicalJson(value);

describe('RFC 8785 canonical JSON', () => {
  const documents = readdirSync(join(vectors, 'input')).filter((name) => name.endsWith('.json'));

  it('has the six documents of the test data', () => {
    expect(documents.sort()).toEqual([
      'arrays.json',
      'french.json',
      'structures.json',
      'unicode.json',
      'values.json',
      'weird.json',
    ]);
  });

  it.each(documents)('writes %s as the RFC does, to the byte', (name) => {
    const input: unknown = JSON.parse(readFileSync(join(vectors, 'input', name), 'utf8'));
    const bytes = new TextEncoder().encode(canonical(input));
    // The expected output file is the canonical form itself, byte for byte (no trailing newline).
    expect(Buffer.from(bytes).equals(readFileSync(join(vectors, 'output', name)))).toBe(true);
    const hex = readFileSync(join(vectors, 'outhex', name.replace('.json', '.txt')), 'utf8')
      .trim()
      .split(/\s+/)
      .join('');
    expect(Buffer.from(bytes).toString('hex')).toBe(hex);
  });

  const samples = readFileSync(join(vectors, 'numbers.txt'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(',') as [string, string]);

  it('signs a receipt as its canonical JSON without merchantSignature', () => {
    const receipt = { b: 1, a: [{ d: 'é', c: undefined }], merchantSignature: { kid: 'k', jws: 'x..y' } };
    expect(new TextDecoder().decode(signedReceiptBytes(receipt))).toBe('{"a":[{"d":"é"}],"b":1}');
  });

  it.each(samples)('writes the double %s as %s (null: refused)', (hex, expected) => {
    const value = Buffer.from(hex.padStart(16, '0'), 'hex').readDoubleBE();
    if (expected === 'null') {
      expect(() => canonical({ value })).toThrow(/RFC 8785/);
      return;
    }
    expect(canonical({ value })).toBe(`{"value":${expected}}`);
  });

  it("writes the ES6 number test file's first 1,000 and 10,000 lines with the published SHA-256", () => {
    // The generator (numgen.js): a list of edge cases, 2,000 doubles from the smallest normal up, then a
    // SHA-256 chain read as doubles, skipping zeros and non-finite values.
    const generator = readFileSync(join(vectors, 'numgen.js.txt'), 'utf8');
    const listed = generator.slice(generator.indexOf('staticU64s'), generator.indexOf('])'));
    const statics = [...listed.matchAll(/0x([0-9a-f]{16})n/g)].map((match) => BigInt(`0x${match[1]}`));
    expect(statics).toHaveLength(168);
    const published = readFileSync(join(vectors, 'testdata-README.md'), 'utf8');
    const checksumOf = (lines: number) =>
      new RegExp(`\\| ([0-9a-f]{64}) \\| ${lines} +\\|`).exec(published)?.[1];
    const doubles = function* (): Generator<number> {
      const word = new BigUint64Array(1);
      const double = new Float64Array(word.buffer);
      for (const value of statics) {
        word[0] = value;
        yield double[0]!;
      }
      for (let i = 0n; i < 2000n; i++) {
        word[0] = 0x0010000000000000n + i;
        yield double[0]!;
      }
      let block = Buffer.alloc(32);
      for (;;) {
        block = createHash('sha256').update(block).digest();
        const values = new Float64Array(block.buffer, block.byteOffset, 4);
        for (const value of values) if (value !== 0 && Number.isFinite(value)) yield value;
      }
    };
    const hash = createHash('sha256');
    const word = new BigUint64Array(1);
    const double = new Float64Array(word.buffer);
    let lines = 0;
    for (const value of doubles()) {
      double[0] = value;
      const serialised = canonical({ n: value }).slice('{"n":'.length, -1);
      hash.update(`${word[0]!.toString(16)},${serialised}\n`);
      lines += 1;
      if (lines === 1000) expect(hash.copy().digest('hex')).toBe(checksumOf(1000));
      if (lines === 10_000) break;
    }
    expect(hash.digest('hex')).toBe(checksumOf(10_000));
  });
});
