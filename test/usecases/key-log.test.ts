import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InvalidRequestError } from '../../lib/kernel/errors.js';
import { appendKeyEvent, consistencyProof, inclusionProof } from '../../lib/key-log/log.js';
import {
  consistencyRanges,
  inclusionRanges,
  leafHash,
  nodesFor,
  rangeHash,
  verifyConsistency,
  verifyInclusion,
  type NodeRef,
} from '../../lib/key-log/merkle.js';
import { startUseCases, type UseCases } from './support.js';

/** The key log on DynamoDB Local: appends claim indexes one by one, concurrent ones never fork. */
describe('key log appends', () => {
  let useCases: UseCases;
  beforeAll(async () => {
    useCases = await startUseCases();
  });
  afterAll(async () => {
    await useCases.close();
  });

  const event = (n: number) => ({
    merchantClientId: `client-${n % 3}`,
    kid: `kid-${n}`,
    jwk: { kty: 'OKP', crv: 'Ed25519', x: `x${n}` },
    event: 'registered' as const,
    at: '2026-11-21T12:00:00.000Z',
  });

  const proofFrom = async (ranges: { start: number; size: number }[]) => {
    const found = await useCases.deps.repos.keyLog.nodes(nodesFor(ranges));
    const lookup = (node: NodeRef) => Buffer.from(found.get(`NODE#${node.level}#${node.index}`)!, 'base64');
    return ranges.map((range) => rangeHash(range, lookup));
  };

  it('gives concurrent appenders distinct indexes, and every leaf verifies under the final head', async () => {
    const first = await appendKeyEvent(useCases.deps, event(0));
    expect(first.leaf.index).toBe(0);
    const firstHead = await useCases.deps.repos.keyLog.head();
    const results = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => appendKeyEvent(useCases.deps, event(n))));
    expect(results.map((r) => r.leaf.index).toSorted()).toEqual([1, 2, 3, 4, 5, 6]);
    const head = await useCases.deps.repos.keyLog.head();
    expect(head.treeSize).toBe(7);
    const leaves = await useCases.deps.repos.keyLog.leaves(0, 7);
    expect(leaves.map((l) => l.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const root = Buffer.from(head.rootHash, 'base64');
    for (const { index, leaf } of leaves) {
      const proof = await proofFrom(inclusionRanges(index, 7));
      expect(verifyInclusion(index, 7, leafHash(Buffer.from(leaf)), proof, root)).toBe(true);
    }
    const consistency = await proofFrom(consistencyRanges(1, 7));
    expect(verifyConsistency(1, 7, consistency, Buffer.from(firstHead.rootHash, 'base64'), root)).toBe(true);
  });

  it('serves proofs that verify, and refuses ranges past the head with a 400 error', async () => {
    const head = await useCases.deps.repos.keyLog.head();
    const root = Buffer.from(head.rootHash, 'base64');
    const [leaf] = await useCases.deps.repos.keyLog.leaves(4, 5);
    const inclusion = await inclusionProof(useCases.deps, { index: 4, treeSize: head.treeSize });
    const proof = inclusion.proof.map((h) => Buffer.from(h, 'base64'));
    expect(verifyInclusion(4, head.treeSize, leafHash(Buffer.from(leaf!.leaf)), proof, root)).toBe(true);
    const consistency = await consistencyProof(useCases.deps, { first: 3, second: head.treeSize });
    expect(consistency.proof.length).toBeGreaterThan(0);
    await expect(
      inclusionProof(useCases.deps, { index: 0, treeSize: head.treeSize + 1 }),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(
      inclusionProof(useCases.deps, { index: head.treeSize, treeSize: head.treeSize }),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(consistencyProof(useCases.deps, { first: 0, second: 2 })).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    await expect(
      consistencyProof(useCases.deps, { first: 3, second: head.treeSize + 1 }),
    ).rejects.toBeInstanceOf(InvalidRequestError);
  });

  it('refuses a second claim of a taken index (append-only)', async () => {
    expect(await useCases.deps.repos.keyLog.claim(0, '{"forged":true}')).toBe(false);
  });
});
