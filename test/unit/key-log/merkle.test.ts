import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import {
  closedNodes,
  consistencyRanges,
  inclusionRanges,
  leafHash,
  nodesFor,
  rangeHash,
  rootOf,
  siblingsToClose,
  verifyConsistency,
  verifyInclusion,
  type LeafRange,
  type NodeRef,
} from '../../../lib/key-log/merkle.js';

/**
 * The key log's tree against transparency-dev/merkle, Go's RFC 6962/9162 implementation
 * (test/vendor/transparency-dev-merkle/README.md): its eight test leaves and their roots, and its
 * proof vectors, valid and tampered, which our verifiers must judge as it does.
 */
const vendor = join(import.meta.dirname, '..', '..', 'vendor', 'transparency-dev-merkle');
const b64 = (value: string) => Buffer.from(value, 'base64');

/** The hex strings of one Go function in testonly/constants.go. */
const goHexes = (name: string): Buffer[] => {
  const source = readFileSync(join(vendor, 'constants.go.txt'), 'utf8');
  const body = source.slice(source.indexOf(`func ${name}(`)).split('\n}\n')[0]!;
  return [...body.matchAll(/hd\("([0-9a-f]*)"\)/g)].map((match) => Buffer.from(match[1]!, 'hex'));
};
const leafInputs = goHexes('LeafInputs');
// RootHashes() opens with EmptyRootHash(), a call rather than a literal.
const rootHashes = [...goHexes('EmptyRootHash'), ...goHexes('RootHashes')];

const vectorFiles = (kind: 'inclusion' | 'consistency') => {
  const base = join(vendor, 'testdata', kind);
  return (readdirSync(base, { recursive: true, encoding: 'utf8' }) as string[])
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({
      name: file,
      vector: JSON.parse(readFileSync(join(base, file), 'utf8')) as Record<string, unknown>,
    }));
};

/** A log's node store, built leaf by leaf as the repository does: each leaf closes its subtrees. */
function storeOf(leaves: Buffer[]): (node: NodeRef) => Buffer {
  const nodes = new Map<string, Buffer>();
  const lookup = (node: NodeRef) => {
    const hash = nodes.get(`${node.level}:${node.index}`);
    if (!hash) throw new Error(`node ${node.level}:${node.index} was not stored`);
    return hash;
  };
  leaves.forEach((leaf, index) => {
    for (const node of closedNodes(index, leafHash(leaf), lookup))
      nodes.set(`${node.level}:${node.index}`, node.hash);
  });
  return lookup;
}
const proofOf = (ranges: LeafRange[], lookup: (node: NodeRef) => Buffer) =>
  ranges.map((range) => rangeHash(range, lookup));
const rootFrom = (size: number, lookup: (node: NodeRef) => Buffer) => rangeHash({ start: 0, size }, lookup);

describe('the RFC 9162 tree', () => {
  it('has the reference roots for every size of the eight test leaves', () => {
    expect(leafInputs).toHaveLength(8);
    expect(rootHashes).toHaveLength(9);
    const lookup = storeOf(leafInputs);
    for (let size = 0; size <= 8; size += 1) {
      expect(rootOf(leafInputs.slice(0, size).map(leafHash)).toString('hex')).toBe(
        rootHashes[size]!.toString('hex'),
      );
      if (size > 0) expect(rootFrom(size, lookup).toString('hex')).toBe(rootHashes[size]!.toString('hex'));
    }
  });

  it('builds the reference inclusion and consistency proofs from stored nodes', () => {
    const lookup = storeOf(leafInputs);
    for (const { name, vector } of vectorFiles('inclusion').filter((v) =>
      v.name.endsWith('happy-path.json'),
    )) {
      const proof = proofOf(inclusionRanges(vector.leafIdx as number, vector.treeSize as number), lookup);
      expect({ name, proof: proof.map((h) => h.toString('base64')) }).toEqual({
        name,
        proof: (vector.proof as string[] | null) ?? [],
      });
    }
    for (const { name, vector } of vectorFiles('consistency').filter((v) =>
      v.name.endsWith('happy-path.json'),
    )) {
      const [first, second] = [vector.size1 as number, vector.size2 as number];
      if (first === 0) continue;
      const proof = proofOf(consistencyRanges(first, second), lookup);
      expect({ name, proof: proof.map((h) => h.toString('base64')) }).toEqual({
        name,
        proof: (vector.proof as string[] | null) ?? [],
      });
    }
  });

  it('needs O(log n) stored nodes for a proof in a large tree', () => {
    // 1,000,003 leaves: each proof element is one node or, at the ragged edge, one node per set bit.
    expect(nodesFor(inclusionRanges(123_456, 1_000_003)).length).toBeLessThanOrEqual(2 * 20);
    expect(nodesFor(consistencyRanges(777_777, 1_000_003)).length).toBeLessThanOrEqual(2 * 21);
    expect(siblingsToClose(2 ** 20 - 1)).toHaveLength(20);
  });
});

describe('verification, as the reference verifier judges', () => {
  it.each(vectorFiles('inclusion'))('inclusion $name', ({ vector }) => {
    const proof = ((vector.proof as string[] | null) ?? []).map(b64);
    const verified = verifyInclusion(
      vector.leafIdx as number,
      vector.treeSize as number,
      b64(vector.leafHash as string),
      proof,
      b64((vector.root as string | null) ?? ''),
    );
    expect(verified).toBe(!vector.wantErr);
  });

  it.each(vectorFiles('consistency'))('consistency $name', ({ vector }) => {
    const proof = ((vector.proof as string[] | null) ?? []).map(b64);
    const verified = verifyConsistency(
      vector.size1 as number,
      vector.size2 as number,
      proof,
      b64((vector.root1 as string | null) ?? ''),
      b64((vector.root2 as string | null) ?? ''),
    );
    expect(verified).toBe(!vector.wantErr);
  });
});

describe('a log that lies is caught', () => {
  const leaves = Array.from({ length: 13 }, (_, i) => Buffer.from(`{"index":${i},"event":"registered"}`));
  const lookup = storeOf(leaves);
  const root = rootFrom(13, lookup);

  it('verifies every honest proof (each index in each size, each pair of sizes)', () => {
    for (let size = 1; size <= 13; size += 1) {
      const sizeRoot = rootFrom(size, lookup);
      for (let index = 0; index < size; index += 1) {
        const proof = proofOf(inclusionRanges(index, size), lookup);
        expect(verifyInclusion(index, size, leafHash(leaves[index]!), proof, sizeRoot)).toBe(true);
      }
      for (let first = 1; first <= size; first += 1) {
        const proof = proofOf(consistencyRanges(first, size), lookup);
        expect(verifyConsistency(first, size, proof, rootFrom(first, lookup), sizeRoot)).toBe(true);
      }
    }
  });

  it('refuses an altered leaf', () => {
    const proof = proofOf(inclusionRanges(5, 13), lookup);
    const altered = Buffer.from(leaves[5]!.toString().replace('registered', 'revoked'));
    expect(verifyInclusion(5, 13, leafHash(altered), proof, root)).toBe(false);
    // Nor does the tree holding the altered leaf extend the head that held the original.
    const forged = storeOf(leaves.map((leaf, i) => (i === 5 ? altered : leaf)));
    expect(
      verifyConsistency(
        8,
        13,
        proofOf(consistencyRanges(8, 13), forged),
        rootFrom(8, lookup),
        rootFrom(13, forged),
      ),
    ).toBe(false);
  });

  it('refuses a removed leaf', () => {
    const without = leaves.filter((_, i) => i !== 3);
    const shrunk = storeOf(without);
    // The old leaf's proof does not reach the new root, and the new tree is no extension of the old head.
    expect(
      verifyInclusion(
        3,
        12,
        leafHash(leaves[3]!),
        proofOf(inclusionRanges(3, 12), shrunk),
        rootFrom(12, shrunk),
      ),
    ).toBe(false);
    expect(
      verifyConsistency(
        5,
        12,
        proofOf(consistencyRanges(5, 12), shrunk),
        rootFrom(5, lookup),
        rootFrom(12, shrunk),
      ),
    ).toBe(false);
  });

  it('refuses a forked tree head: two trees that share 7 leaves and differ after', () => {
    const fork = storeOf([
      ...leaves.slice(0, 7),
      Buffer.from('{"index":7,"event":"registered","kid":"evil"}'),
      ...leaves.slice(8),
    ]);
    const forkRoot = rootFrom(13, fork);
    // Each branch is consistent with the shared 7-leaf head...
    expect(
      verifyConsistency(7, 13, proofOf(consistencyRanges(7, 13), fork), rootFrom(7, lookup), forkRoot),
    ).toBe(true);
    // ...but neither extends the other's 9-leaf head: the fork shows, whichever proof the log gives.
    for (const source of [lookup, fork]) {
      expect(
        verifyConsistency(9, 13, proofOf(consistencyRanges(9, 13), source), rootFrom(9, lookup), forkRoot),
      ).toBe(false);
      expect(
        verifyConsistency(9, 13, proofOf(consistencyRanges(9, 13), source), rootFrom(9, fork), root),
      ).toBe(false);
    }
  });
});
