import { canonicalJson, type KeyLogLeaf } from '@receipt-service/receipt-core';
import type { CoreDeps } from '../app/deps.js';
import { InvalidRequestError } from '../kernel/errors.js';
import {
  closedNodes,
  consistencyRanges,
  inclusionRanges,
  leafHash,
  nodesFor,
  rangeHash,
  rangeNodes,
  siblingsToClose,
  type LeafRange,
  type NodeRef,
} from './merkle.js';

/** A leaf of the key log (DECISIONS, Round 4): its JCS is what is hashed; the SDK checks the same type. */
export type { KeyLogLeaf } from '@receipt-service/receipt-core';

export type KeyLogDeps = { repos: Pick<CoreDeps['repos'], 'keyLog'> };

const nodePk = (node: NodeRef) => `NODE#${node.level}#${node.index}`;

const lookupIn = (found: Map<string, string>) => (node: NodeRef) => {
  const hash = found.get(nodePk(node));
  if (hash === undefined) throw new Error(`key log node ${node.level}:${node.index} is missing`);
  return Buffer.from(hash, 'base64');
};

/**
 * Moves the head over every claimed leaf, one at a time and in order: each step writes the subtrees
 * the leaf closes, then moves the head by a conditional update. Any appender may do any step (each is
 * a function of the leaves), so a crashed appender's leaf is finished by the next one.
 */
async function advance(deps: KeyLogDeps): Promise<{ treeSize: number; rootHash: string }> {
  for (;;) {
    const head = await deps.repos.keyLog.head();
    const [next] = await deps.repos.keyLog.leaves(head.treeSize, head.treeSize + 1);
    if (!next) return head;
    const index = head.treeSize;
    const found = await deps.repos.keyLog.nodes(siblingsToClose(index));
    const closed = closedNodes(index, leafHash(Buffer.from(next.leaf)), lookupIn(found));
    await deps.repos.keyLog.putNodes(closed.map((node) => ({ ...node, hash: node.hash.toString('base64') })));
    const size = index + 1;
    const root = rangeHash({ start: 0, size }, lookupIn(await deps.repos.keyLog.nodes(rangeNodes(0, size))));
    await deps.repos.keyLog.advanceHead(index, root.toString('base64'));
  }
}

/**
 * Appends a key event: the next free index is claimed by a conditional put (two appenders never hold
 * the same index, so the tree never forks), then the head is brought up to it.
 */
export async function appendKeyEvent(
  deps: KeyLogDeps,
  event: Omit<KeyLogLeaf, 'index'>,
): Promise<{ leaf: KeyLogLeaf; treeSize: number }> {
  let index = (await deps.repos.keyLog.head()).treeSize;
  for (;;) {
    const leaf: KeyLogLeaf = { index, ...event };
    if (await deps.repos.keyLog.claim(index, canonicalJson(leaf))) {
      await deps.repos.keyLog.indexKidEvent(event.kid, {
        index,
        event: event.event,
        merchantClientId: event.merchantClientId,
      });
      let head = await advance(deps);
      while (head.treeSize <= index) head = await advance(deps);
      return { leaf, treeSize: head.treeSize };
    }
    index += 1;
  }
}

/** One event a key change puts in the log: who the key is under, and what happened to it. */
export type KeyEventStep = Pick<KeyLogLeaf, 'merchantClientId' | 'event'>;

const sameStep = (a: KeyEventStep, b: KeyEventStep) =>
  a.event === b.event && a.merchantClientId === b.merchantClientId;

/**
 * Logs the events of one key change, in order, before the change is stored (lib/merchants/signing-keys.ts):
 * a key is never served before its leaf exists. A change retried after a crash between the log and the
 * store finds its events at the end of the kid's history and logs only the ones missing, so the retry
 * does not log the change twice.
 */
export async function logKeyEvents(
  deps: KeyLogDeps,
  input: { kid: string; jwk: Record<string, string>; steps: KeyEventStep[]; at: string },
): Promise<void> {
  const history = await deps.repos.keyLog.kidEvents(input.kid);
  let done = 0;
  for (let n = Math.min(input.steps.length, history.length); n > 0 && done === 0; n -= 1) {
    const tail = history.slice(history.length - n);
    if (tail.every((entry, i) => sameStep(entry, input.steps[i]!))) done = n;
  }
  for (const step of input.steps.slice(done)) {
    await appendKeyEvent(deps, { ...step, kid: input.kid, jwk: input.jwk, at: input.at });
  }
}

const badRange = (field: string, message: string) =>
  new InvalidRequestError(`The key log has no such range: ${field} ${message}`, [{ field, message }]);

/** Hashes of the ranges a proof names, read in one batch of O(log n) stored nodes. */
async function hashesOf(deps: KeyLogDeps, ranges: LeafRange[]): Promise<string[]> {
  const lookup = lookupIn(await deps.repos.keyLog.nodes(nodesFor(ranges)));
  return ranges.map((range) => rangeHash(range, lookup).toString('base64'));
}

/** The audit path of the leaf at `index` in the tree of `treeSize` leaves (≤ the current head). */
export async function inclusionProof(
  deps: KeyLogDeps,
  input: { index: number; treeSize: number },
): Promise<{ index: number; treeSize: number; proof: string[] }> {
  const head = await deps.repos.keyLog.head();
  if (input.treeSize < 1 || input.treeSize > head.treeSize)
    throw badRange('treeSize', `must be between 1 and the head's size (${head.treeSize})`);
  if (input.index < 0 || input.index >= input.treeSize) throw badRange('index', 'must be below treeSize');
  return { ...input, proof: await hashesOf(deps, inclusionRanges(input.index, input.treeSize)) };
}

/** The proof that the tree of `second` leaves extends the tree of `first` (0 < first ≤ second ≤ head). */
export async function consistencyProof(
  deps: KeyLogDeps,
  input: { first: number; second: number },
): Promise<{ first: number; second: number; proof: string[] }> {
  const head = await deps.repos.keyLog.head();
  if (input.second > head.treeSize)
    throw badRange('second', `must not exceed the head's size (${head.treeSize})`);
  if (input.first < 1 || input.first > input.second) throw badRange('first', 'must be between 1 and second');
  return { ...input, proof: await hashesOf(deps, consistencyRanges(input.first, input.second)) };
}
