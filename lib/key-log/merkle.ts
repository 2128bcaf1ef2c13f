import { createHash } from 'node:crypto';
import { merkleLeafHash, merkleNodeHash } from '@receipt-service/receipt-core';

/**
 * The Merkle tree of RFC 9162 §2 (the hashing of RFC 6962): SHA-256, leaves prefixed 0x00, nodes 0x01.
 * Proofs are built from the hashes of complete subtrees (`NodeRef`: `level` 0 is the leaves, a node at
 * `level` L and `index` i covers leaves [i·2^L, (i+1)·2^L)), which the log stores as it grows, so a proof
 * names O(log n) nodes to read and never rehashes the tree.
 */
export interface NodeRef {
  level: number;
  index: number;
}

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

// The hashes and the proof checks are receipt-core's, which the SDK verifies with: one copy of each.
export const leafHash = (leaf: Uint8Array): Buffer => Buffer.from(merkleLeafHash(leaf));
export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer =>
  Buffer.from(merkleNodeHash(left, right));
export { verifyConsistency, verifyInclusion } from '@receipt-service/receipt-core';
/** MTH({}): the hash of the empty string. */
export const emptyRoot = (): Buffer => sha256();

/** The largest power of two smaller than n (n > 1): RFC 9162's k. */
const split = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

const isPowerOfTwo = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;

/**
 * The complete subtrees whose hashes make MTH(D[start:start+size]), left to right. A range the tree's
 * own splits produce is either complete or ends at the tree's right edge, so it breaks into at most
 * log2(size)+1 complete subtrees.
 */
export function rangeNodes(start: number, size: number): NodeRef[] {
  if (size === 1 || (isPowerOfTwo(size) && start % size === 0)) {
    const level = Math.log2(size);
    return [{ level, index: start / size }];
  }
  const k = split(size);
  return [...rangeNodes(start, k), ...rangeNodes(start + k, size - k)];
}

/** A range of leaves whose MTH is one element of a proof. */
export interface LeafRange {
  start: number;
  size: number;
}

/** RFC 9162 §2.1.3.1 PATH(m, D[n]): the ranges whose hashes are the inclusion proof, leaf first. */
export function inclusionRanges(index: number, treeSize: number): LeafRange[] {
  const path = (m: number, start: number, n: number): LeafRange[] => {
    if (n <= 1) return [];
    const k = split(n);
    return m < k
      ? [...path(m, start, k), { start: start + k, size: n - k }]
      : [...path(m - k, start + k, n - k), { start, size: k }];
  };
  if (!(index >= 0 && index < treeSize)) throw new RangeError('leaf index outside the tree');
  return path(index, 0, treeSize);
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[n]): the ranges whose hashes are the consistency proof (0 < m ≤ n). */
export function consistencyRanges(first: number, second: number): LeafRange[] {
  const subproof = (m: number, start: number, n: number, b: boolean): LeafRange[] => {
    if (m === n) return b ? [] : [{ start, size: n }];
    const k = split(n);
    return m <= k
      ? [...subproof(m, start, k, b), { start: start + k, size: n - k }]
      : [...subproof(m - k, start + k, n - k, false), { start, size: k }];
  };
  if (!(first > 0 && first <= second)) throw new RangeError('consistency needs 0 < first ≤ second');
  return subproof(first, 0, second, true);
}

const nodeKey = (node: NodeRef) => `${node.level}:${node.index}`;

/** Every node a set of ranges needs, once each: what a proof reads from storage. */
export const nodesFor = (ranges: LeafRange[]): NodeRef[] => {
  const seen = new Map<string, NodeRef>();
  for (const range of ranges) {
    for (const node of rangeNodes(range.start, range.size)) seen.set(nodeKey(node), node);
  }
  return [...seen.values()];
};

/** MTH of a range from the stored node hashes (`lookup` throws on a missing node). */
export function rangeHash(range: LeafRange, lookup: (node: NodeRef) => Buffer): Buffer {
  const hashes = rangeNodes(range.start, range.size).map(lookup);
  // rangeNodes lists the subtrees left to right; the ragged edge folds from the right (RFC 9162 MTH).
  return hashes.reduceRight((right, left) => nodeHash(left, right));
}

/** MTH(D[n]) over the leaf hashes: for tests and small trees. */
export function rootOf(leafHashes: Buffer[]): Buffer {
  if (leafHashes.length === 0) return emptyRoot();
  if (leafHashes.length === 1) return leafHashes[0]!;
  const k = split(leafHashes.length);
  return nodeHash(rootOf(leafHashes.slice(0, k)), rootOf(leafHashes.slice(k)));
}

/**
 * The complete subtrees a new leaf at `index` closes, bottom up: the leaf itself, then each parent
 * whose right child it completes. The log stores each, so every later proof can read them.
 */
export function closedNodes(
  index: number,
  hash: Buffer,
  lookup: (node: NodeRef) => Buffer,
): Array<NodeRef & { hash: Buffer }> {
  const closed: Array<NodeRef & { hash: Buffer }> = [{ level: 0, index, hash }];
  let current = hash;
  let position = index;
  let level = 0;
  while (position % 2 === 1) {
    const left = lookup({ level, index: position - 1 });
    current = nodeHash(left, current);
    position = (position - 1) / 2;
    level += 1;
    closed.push({ level, index: position, hash: current });
  }
  return closed;
}

/** The left siblings `closedNodes` will read for a leaf at `index`. */
export function siblingsToClose(index: number): NodeRef[] {
  const siblings: NodeRef[] = [];
  let position = index;
  let level = 0;
  while (position % 2 === 1) {
    siblings.push({ level, index: position - 1 });
    position = (position - 1) / 2;
    level += 1;
  }
  return siblings;
}
