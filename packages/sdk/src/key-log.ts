/**
 * The merchant key log from a device or a merchant's back office (DECISIONS, Round 4, "Key
 * transparency"): what to fetch so that verifyReceiptSignature can demand a kid be in the log, and a
 * watch of every key event under a merchant's name. Every answer is checked by receipt-core's code
 * (the same the service builds its tree with); nothing the service says is taken on trust.
 */
import {
  canonicalJson,
  checkConsistency,
  encodeBase64,
  KeyLogError,
  merkleLeafHash,
  merkleRoot,
  verifyTreeHead,
  type KeyLogEvidence,
  type KeyLogLeaf,
  type TreeHead,
} from '@receipt-service/receipt-core';
import type { ReceiptServiceClient } from './client.js';

type LogPublicKey = KeyLogEvidence['logPublicKey'];

const fail = (what: string, error: unknown): never => {
  throw new KeyLogError(`${what}: ${error ? JSON.stringify(error) : 'no answer'}`);
};

async function currentHead(client: ReceiptServiceClient): Promise<string> {
  const { data, error } = await client.GET('/api/v1/key-log/tree-head');
  const head = data?.data as { signature?: string } | undefined;
  return head?.signature ?? fail('The tree head could not be read', error);
}

async function consistencyFrom(
  client: ReceiptServiceClient,
  kept: string,
  head: TreeHead,
  logPublicKey: LogPublicKey,
): Promise<{ treeHead: string; proof: string[] }> {
  const before = await verifyTreeHead(kept, logPublicKey);
  if (before.treeSize === 0 || before.treeSize >= head.treeSize) return { treeHead: kept, proof: [] };
  const { data, error } = await client.GET('/api/v1/key-log/proof/consistency', {
    params: { query: { first: before.treeSize, second: head.treeSize } },
  });
  const proof = (data?.data as { proof?: string[] } | undefined)?.proof;
  return { treeHead: kept, proof: proof ?? fail('The consistency proof could not be read', error) };
}

/**
 * What verifyReceiptSignature's `keyLog` option needs for `kid`: the current signed head, the kid's
 * leaves with their proofs, and (given the head the device kept last) the proof that the log only grew.
 * Keep the head verifyReceiptSignature returns as the next `kept`.
 */
export async function fetchKeyLogEvidence(
  client: ReceiptServiceClient,
  kid: string,
  options: { logPublicKey: LogPublicKey; kept?: string },
): Promise<KeyLogEvidence> {
  const treeHead = await currentHead(client);
  const head = await verifyTreeHead(treeHead, options.logPublicKey);
  const { data, error } = await client.GET('/api/v1/key-log/proof/inclusion', {
    params: { query: { kid, treeSize: head.treeSize } },
  });
  // A kid the log does not name is a 404: evidence with no leaves, which verification refuses.
  if (!data && (error as { error?: { code?: string } } | undefined)?.error?.code !== 'not_found')
    fail('The inclusion proof could not be read', error);
  const entries = ((data?.data as KeyLogEvidence['inclusion'] | undefined)?.entries ?? []).map((entry) => ({
    leaf: entry.leaf,
    proof: entry.proof,
  }));
  return {
    logPublicKey: options.logPublicKey,
    treeHead,
    inclusion: { entries },
    ...(options.kept
      ? { kept: await consistencyFrom(client, options.kept, head, options.logPublicKey) }
      : {}),
  };
}

/**
 * Every key event under `merchantClientId` since `sinceTreeHead` (a signed head's JWS the merchant
 * kept; null for the whole log), checked: the new head is signed by the log key and extends the kept
 * one, and the log's leaves, read in pages, hash to the new head's root, so no event was left out or
 * changed. Returns the events and the head to keep for the next watch. A key the merchant did not
 * register is one of these events.
 */
export async function watchMerchantKeys(
  client: ReceiptServiceClient,
  merchantClientId: string,
  sinceTreeHead: string | null,
  options: { logPublicKey: LogPublicKey },
): Promise<{ events: KeyLogLeaf[]; treeHead: string; head: TreeHead }> {
  const treeHead = await currentHead(client);
  const head = await verifyTreeHead(treeHead, options.logPublicKey);
  let since = 0;
  if (sinceTreeHead) {
    const kept = await consistencyFrom(client, sinceTreeHead, head, options.logPublicKey);
    since = (await checkConsistency(head, kept, options.logPublicKey)).treeSize;
  }
  const leaves: KeyLogLeaf[] = [];
  for (let start = 0; start < head.treeSize; start += 100) {
    const end = Math.min(head.treeSize, start + 100);
    const { data, error } = await client.GET('/api/v1/key-log/entries', {
      params: { query: { start, end } },
    });
    const page = (data?.data as { entries?: KeyLogLeaf[] } | undefined)?.entries;
    leaves.push(...(page ?? fail('The log entries could not be read', error)));
  }
  const root = merkleRoot(
    leaves.map((leaf) => merkleLeafHash(new TextEncoder().encode(canonicalJson(leaf)))),
  );
  if (leaves.some((leaf, index) => leaf.index !== index) || encodeBase64(root) !== head.rootHash)
    throw new KeyLogError(
      'The log entries do not hash to the signed tree head: the log is not what it signed',
    );
  return {
    events: leaves.filter((leaf) => leaf.index >= since && leaf.merchantClientId === merchantClientId),
    treeHead,
    head,
  };
}
