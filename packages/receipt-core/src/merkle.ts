import { sha256 } from '@noble/hashes/sha2.js';

/**
 * RFC 9162 §2 (the hashing of RFC 6962) as a verifier needs it: SHA-256, leaves prefixed 0x00, nodes
 * 0x01, and the checks of inclusion and consistency proofs. The service's key log (lib/key-log) builds
 * its tree with these hashes and the SDK verifies its proofs with these checks: one copy of each.
 */
const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

export const merkleLeafHash = (leaf: Uint8Array): Uint8Array => sha256(concat(Uint8Array.of(0x00), leaf));
export const merkleNodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array =>
  sha256(concat(Uint8Array.of(0x01), left, right));

const isPowerOfTwo = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;
const nodeHash = merkleNodeHash;

const isHash = (value: Uint8Array): boolean => value.length === 32;

const equal = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((byte, i) => byte === b[i]);

/** RFC 9162 §2.1.3.2: does `proof` show the leaf with `hash` at `index` in the tree of `root`? */
export function verifyInclusion(
  index: number,
  treeSize: number,
  hash: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(treeSize)) || index < 0 || index >= treeSize)
    return false;
  if (![hash, root, ...proof].every(isHash)) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r: Uint8Array = hash;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equal(r, root);
}

/** RFC 9162 §2.1.4.2: is the tree of `secondRoot` (size `second`) an append-only extension of `firstRoot`'s? */
export function verifyConsistency(
  first: number,
  second: number,
  proof: readonly Uint8Array[],
  firstRoot: Uint8Array,
  secondRoot: Uint8Array,
): boolean {
  if (!(Number.isSafeInteger(first) && Number.isSafeInteger(second)) || first < 0 || second < first)
    return false;
  // Every tree extends the empty one: a proof of it proves nothing, so none is accepted (as Go's verifier).
  if (first === 0) return false;
  if (first === second) return proof.length === 0 && equal(firstRoot, secondRoot);
  if (proof.length === 0 || ![firstRoot, secondRoot, ...proof].every(isHash)) return false;
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Uint8Array = path[0]!;
  let sr: Uint8Array = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equal(fr, firstRoot) && equal(sr, secondRoot);
}

const split = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/** MTH(D[n]) over the leaf hashes (RFC 9162 §2.1.1): a watcher that read every leaf checks a head with it. */
export function merkleRoot(leafHashes: readonly Uint8Array[]): Uint8Array {
  if (leafHashes.length === 0) return sha256(new Uint8Array());
  if (leafHashes.length === 1) return leafHashes[0]!;
  const k = split(leafHashes.length);
  return merkleNodeHash(merkleRoot(leafHashes.slice(0, k)), merkleRoot(leafHashes.slice(k)));
}
