import { compactVerify, importJWK, type JWK } from 'jose';
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

/** The head a JWS signs, if the log's public key verifies it (jose does the checking); else null. */
export async function verifyTreeHead(jws: string, publicJwk: JWK): Promise<TreeHead | null> {
  try {
    const key = await importJWK(publicJwk, 'ES256');
    const { payload, protectedHeader } = await compactVerify(jws, key, { algorithms: ['ES256'] });
    if (protectedHeader.typ !== 'tree-head+jws') return null;
    return JSON.parse(new TextDecoder().decode(payload)) as TreeHead;
  } catch {
    return null;
  }
}
