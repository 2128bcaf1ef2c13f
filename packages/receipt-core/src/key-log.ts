import canonicalize from 'canonicalize';
import { decodeBase64, decodeBase64Url, isCanonicalBase64Url } from './base64.js';
import { merkleLeafHash, verifyConsistency, verifyInclusion } from './merkle.js';
import { subtle } from './webcrypto.js';

/*
 * A device's checks against the merchant key log (DECISIONS, Round 4, "Key transparency"): a tree head
 * signed under the log key it pinned, a kid's leaves included under that head, and the head extending
 * the last one it kept. Nothing here trusts the service: every answer is checked.
 */

/** A leaf of the key log; its RFC 8785 JSON is what the tree hashes. */
export interface KeyLogLeaf {
  index: number;
  merchantClientId: string;
  kid: string;
  jwk: Record<string, string>;
  event: 'registered' | 'revoked';
  at: string;
}

export interface TreeHead {
  treeSize: number;
  rootHash: string;
  timestamp: number;
}

/** A signed tree head as GET /api/v1/key-log/tree-head answers it: the JWS is what counts. */
export interface SignedTreeHead extends TreeHead {
  signature: string;
}

export class KeyLogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyLogError';
  }
}

const utf8 = new TextEncoder();

/** The head a compact JWS (ES256, typ tree-head+jws) signs under the log's public key; throws KeyLogError. */
export async function verifyTreeHead(
  jws: string,
  logPublicKey: { kty?: string; crv?: string; x?: string; y?: string },
): Promise<TreeHead> {
  const parts = jws.split('.');
  const refuse = (why: string): never => {
    throw new KeyLogError(`The tree head is refused: ${why}`);
  };
  if (parts.length !== 3 || !parts.every(isCanonicalBase64Url)) return refuse('not a compact JWS');
  const [header, payload, signature] = parts as [string, string, string];
  let parsedHeader: { alg?: unknown; typ?: unknown };
  let head: TreeHead;
  try {
    parsedHeader = JSON.parse(new TextDecoder().decode(decodeBase64Url(header))) as typeof parsedHeader;
    head = JSON.parse(new TextDecoder().decode(decodeBase64Url(payload))) as TreeHead;
  } catch {
    return refuse('its header or payload is not JSON');
  }
  if (parsedHeader.alg !== 'ES256' || parsedHeader.typ !== 'tree-head+jws')
    return refuse('not an ES256 tree-head+jws');
  if (logPublicKey.kty !== 'EC' || logPublicKey.crv !== 'P-256' || !logPublicKey.x || !logPublicKey.y)
    return refuse('the log key is not a P-256 public key');
  const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  let valid = false;
  try {
    const key = await subtle().importKey(
      'jwk',
      { kty: 'EC', crv: 'P-256', x: logPublicKey.x, y: logPublicKey.y },
      ecdsa,
      false,
      ['verify'],
    );
    valid = await subtle().verify(
      ecdsa,
      key,
      new Uint8Array(decodeBase64Url(signature)!),
      utf8.encode(`${header}.${payload}`),
    );
  } catch {
    valid = false;
  }
  if (!valid) return refuse('its signature is not the log key’s');
  if (!Number.isSafeInteger(head.treeSize) || head.treeSize < 0 || typeof head.rootHash !== 'string')
    return refuse('its payload is not a tree head');
  return { treeSize: head.treeSize, rootHash: head.rootHash, timestamp: head.timestamp };
}

const hashOf = (base64: string): Uint8Array => {
  const bytes = decodeBase64(base64);
  if (!bytes) throw new KeyLogError('A proof carries a hash that is not base64');
  return bytes;
};

/** What a device checks a kid against: fetched from the log (the SDK's client does) and checked here. */
export interface KeyLogEvidence {
  /** The log's public JWK, pinned in the app (GET /api/v1/key-log/public-key, fetched once, kept). */
  logPublicKey: { kty?: string; crv?: string; x?: string; y?: string };
  /** The current signed tree head's JWS (GET /api/v1/key-log/tree-head, `signature`). */
  treeHead: string;
  /** GET /api/v1/key-log/proof/inclusion?kid=&treeSize= of that head: the kid's leaves with their paths. */
  inclusion: { entries: Array<{ leaf: KeyLogLeaf; proof: string[] }> };
  /**
   * The last tree head the device kept (its JWS) and the consistency proof from it to `treeHead`
   * (GET /api/v1/key-log/proof/consistency): a log that forked or dropped leaves fails here.
   */
  kept?: { treeHead: string; proof: string[] };
}

/** The leaves' inclusion under a verified head: each must verify, else KeyLogError. */
export function checkInclusion(head: TreeHead, entries: Array<{ leaf: KeyLogLeaf; proof: string[] }>): void {
  const root = hashOf(head.rootHash);
  for (const { leaf, proof } of entries) {
    const hash = merkleLeafHash(utf8.encode(canonicalize(leaf) ?? ''));
    if (!verifyInclusion(leaf.index, head.treeSize, hash, proof.map(hashOf), root))
      throw new KeyLogError(`Leaf ${leaf.index} is not in the tree of ${head.treeSize} leaves`);
  }
}

/** That `head` extends the head the device kept; returns the kept head. */
export async function checkConsistency(
  head: TreeHead,
  kept: { treeHead: string; proof: string[] },
  logPublicKey: KeyLogEvidence['logPublicKey'],
): Promise<TreeHead> {
  const before = await verifyTreeHead(kept.treeHead, logPublicKey);
  if (before.treeSize > head.treeSize)
    throw new KeyLogError('The tree head is older than the one this device kept: the log went back');
  if (before.treeSize === 0) return before;
  const ok = verifyConsistency(
    before.treeSize,
    head.treeSize,
    kept.proof.map(hashOf),
    hashOf(before.rootHash),
    hashOf(head.rootHash),
  );
  if (!ok) throw new KeyLogError('The tree head does not extend the one this device kept: the log forked');
  return before;
}

/**
 * That `publicJwk` (kid `kid`) is registered in the log under a tree head signed by the log key, and
 * that head extends the one the device kept. Resolves to the verified head (keep it) and the kid's
 * leaves; throws KeyLogError naming what failed.
 */
export async function verifyKeyInLog(
  kid: string,
  publicJwk: { kty: string; crv: string; x: string; y?: string },
  evidence: KeyLogEvidence,
): Promise<{ treeHead: TreeHead; leaves: KeyLogLeaf[] }> {
  const head = await verifyTreeHead(evidence.treeHead, evidence.logPublicKey);
  if (evidence.kept) await checkConsistency(head, evidence.kept, evidence.logPublicKey);
  const entries = evidence.inclusion.entries.filter(({ leaf }) => leaf.kid === kid);
  checkInclusion(head, entries);
  // The same public key, member by member (the caller checked that its thumbprint is the kid).
  const registered = entries.some(
    ({ leaf }) =>
      leaf.event === 'registered' &&
      (['kty', 'crv', 'x', 'y'] as const).every((member) => leaf.jwk[member] === publicJwk[member]),
  );
  if (!registered)
    throw new KeyLogError(`The key ${kid} is not registered in the key log under this tree head`);
  return { treeHead: head, leaves: entries.map(({ leaf }) => leaf) };
}
