import { compactVerify, importJWK, type JWK } from 'jose';
import type { TreeHead } from '../../lib/key-log/tree-head.js';

/**
 * The head a JWS signs, if the log's public key verifies it; else null. jose does the checking, an
 * implementation that is not ours, so the tests check the service's signed heads independently of
 * receipt-core's verifier (the one the SDK and the service ship).
 */
export async function verifyTreeHeadWithJose(jws: string, publicJwk: JWK): Promise<TreeHead | null> {
  try {
    const key = await importJWK(publicJwk, 'ES256');
    const { payload, protectedHeader } = await compactVerify(jws, key, { algorithms: ['ES256'] });
    if (protectedHeader.typ !== 'tree-head+jws') return null;
    return JSON.parse(new TextDecoder().decode(payload)) as TreeHead;
  } catch {
    return null;
  }
}
