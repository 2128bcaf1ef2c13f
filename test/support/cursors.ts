import { expect } from '@jest/globals';

/**
 * A returned cursor edited by one byte, at its start, its middle and its end, and by its last
 * character (which may carry spare base64 bits): each must be refused.
 */
export function editedCursors(cursor: string): string[] {
  const sealed = Buffer.from(cursor, 'base64url');
  const byByte = [0, Math.floor(sealed.length / 2), sealed.length - 1].map((index) => {
    const edited = Buffer.from(sealed);
    edited[index]! ^= 0x01;
    return edited.toString('base64url');
  });
  const last = cursor.at(-1) === 'A' ? 'B' : 'A';
  return [...byByte, `${cursor.slice(0, -1)}${last}`];
}

/** Nothing of `secrets` in the cursor, in its base64url decoding, and no JSON in it either. */
export function expectOpaque(cursor: string, secrets: readonly string[]): void {
  const decoded = Buffer.from(cursor, 'base64url').toString('latin1');
  for (const text of [cursor, decoded]) {
    for (const secret of secrets) expect(text).not.toContain(secret);
  }
  expect(() => JSON.parse(decoded) as unknown).toThrow();
}
