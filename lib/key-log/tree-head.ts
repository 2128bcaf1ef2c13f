import type { LogSigningKey } from '../crypto/log-signing-key.js';

/** A tree head as signed (DECISIONS, Round 4): rootHash in base64, timestamp in epoch milliseconds. */
export interface TreeHead {
  treeSize: number;
  rootHash: string;
  timestamp: number;
}

export type { LogSigningKey } from '../crypto/log-signing-key.js';

const b64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64url');

/** The compact JWS (ES256) of a tree head, under the log signing key. */
export async function signTreeHead(key: LogSigningKey, head: TreeHead): Promise<string> {
  const jwk = await key.publicJwk();
  const header = b64url(JSON.stringify({ alg: 'ES256', kid: jwk.kid, typ: 'tree-head+jws' }));
  const payload = b64url(JSON.stringify(head));
  const signature = await key.signEs256(new TextEncoder().encode(`${header}.${payload}`));
  return `${header}.${payload}.${b64url(signature)}`;
}
