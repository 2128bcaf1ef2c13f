import type { JWK } from 'jose';
import { InvalidRequestError, NotFoundError, type FieldProblem } from '../kernel/errors.js';
import { inclusionProof, type KeyLogDeps, type KeyLogLeaf } from './log.js';
import { emptyRoot } from './merkle.js';
import { signTreeHead, type LogSigningKey, type TreeHead } from './tree-head.js';

/*
 * The key log's public reads (GET /api/v1/key-log/…): what a device or a merchant needs to check a key
 * is in the log and to watch it grow, with no API key.
 */

/** GET /key-log/proof/consistency: the proof that the tree of size `second` extends that of `first`. */
export { consistencyProof } from './log.js';

/**
 * What every public read of the log declares (its route.ts spreads it): no API key, the anonymous rate
 * limit the pipeline keeps, the log's table read-only.
 */
export const publicLogRead = {
  method: 'GET',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read', keyLog: 'read' },
} as const;

/** Most leaves one GET /key-log/entries answers. */
export const maxEntriesPage = 100;

export type SignedTreeHead = TreeHead & { signature: string };

/**
 * The current head, signed now under the log key. One warm function signs a given head once: its
 * signature (and timestamp) is kept until the log grows, so a burst of readers is one KMS call.
 */
export function treeHeadSigner(logKey: LogSigningKey) {
  let last: SignedTreeHead | undefined;
  return async (deps: KeyLogDeps & { clock: { now(): Date } }): Promise<SignedTreeHead> => {
    const head = await deps.repos.keyLog.head();
    const rootHash = head.treeSize === 0 ? emptyRoot().toString('base64') : head.rootHash;
    if (last && last.treeSize === head.treeSize && last.rootHash === rootHash) return last;
    const unsigned: TreeHead = { treeSize: head.treeSize, rootHash, timestamp: deps.clock.now().getTime() };
    last = { ...unsigned, signature: await signTreeHead(logKey, unsigned) };
    return last;
  };
}

export const logPublicKey = (logKey: LogSigningKey): Promise<JWK> => logKey.publicJwk();

const parseLeaf = (leaf: string) => JSON.parse(leaf) as KeyLogLeaf;

/** Leaves [start, end) of the log, at most maxEntriesPage of them, all below the head. */
export async function logEntries(
  deps: KeyLogDeps,
  input: { start: number; end: number },
): Promise<{ start: number; end: number; entries: KeyLogLeaf[] }> {
  const head = await deps.repos.keyLog.head();
  const problems: FieldProblem[] = [];
  if (input.end <= input.start) problems.push({ field: 'end', message: 'must be greater than start' });
  else if (input.end - input.start > maxEntriesPage)
    problems.push({ field: 'end', message: `may be at most start + ${maxEntriesPage}` });
  if (input.end > head.treeSize)
    problems.push({ field: 'end', message: `must not exceed the head's size (${head.treeSize})` });
  if (problems.length > 0)
    throw new InvalidRequestError(
      `The key log has no such range: ${problems[0]!.field} ${problems[0]!.message}`,
      problems,
    );
  const leaves = await deps.repos.keyLog.leaves(input.start, input.end);
  return { ...input, entries: leaves.map(({ leaf }) => parseLeaf(leaf)) };
}

/**
 * Every leaf naming a kid in the tree of `treeSize` leaves, each with its audit path: one read of the
 * kid's index item, then O(log n) nodes per leaf. A kid the tree does not name is a 404.
 */
export async function inclusionByKid(
  deps: KeyLogDeps,
  input: { kid: string; treeSize: number },
): Promise<{ kid: string; treeSize: number; entries: Array<{ leaf: KeyLogLeaf; proof: string[] }> }> {
  const events = (await deps.repos.keyLog.kidEvents(input.kid)).filter(
    (event) => event.index < input.treeSize,
  );
  const head = await deps.repos.keyLog.head();
  if (input.treeSize > head.treeSize)
    throw new InvalidRequestError(`The key log has no such tree: treeSize must not exceed ${head.treeSize}`, [
      { field: 'treeSize', message: `must not exceed the head's size (${head.treeSize})` },
    ]);
  if (events.length === 0)
    throw new NotFoundError('The key log names no key with this kid in a tree of this size', {
      field: 'kid',
    });
  const entries = await Promise.all(
    events.map(async ({ index }) => {
      const [stored] = await deps.repos.keyLog.leaves(index, index + 1);
      const { proof } = await inclusionProof(deps, { index, treeSize: input.treeSize });
      return { leaf: parseLeaf(stored!.leaf), proof };
    }),
  );
  return { ...input, entries };
}
