import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { generateSigningKey, signKeyProof, type SigningKey } from '@receipt-service/sdk';
import { canonicalJson } from '@receipt-service/receipt-core';
import { inclusionProof } from '../../lib/key-log/log.js';
import { leafHash, verifyInclusion } from '../../lib/key-log/merkle.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * Issue 39: every merchant key event is in the key log before the key is served, and each is found
 * there with a proof that verifies.
 */

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

const challenge = async (apiKey: string) => {
  const reply = await stack.request<Data<{ nonce: string; clientId: string }>>(
    'POST',
    '/api/v1/merchants/signing-keys/challenges',
    { apiKey },
  );
  expect(reply.status).toBe(201);
  return reply.json.data;
};

const proof = async (apiKey: string, key: SigningKey, action: string, target?: string) => {
  const { nonce, clientId } = await challenge(apiKey);
  const statement =
    action === 'register' ? { action, clientId, kid: key.kid, nonce } : { action, clientId, target, nonce };
  return signKeyProof(statement, key.privateKey, key.kid);
};

const register = async (apiKey: string, key: SigningKey, by?: SigningKey) =>
  stack.request<Data<{ kid: string; status: string }> & ErrorBody>('POST', '/api/v1/merchants/signing-keys', {
    apiKey,
    body: { publicKey: key.publicJwk, proof: await proof(apiKey, key, 'register') },
    headers: by ? { 'Key-Change-Proof': await proof(apiKey, by, 'add-key', key.kid) } : {},
  });

const revoke = async (apiKey: string, kid: string, by: SigningKey) =>
  stack.request<ErrorBody>('DELETE', `/api/v1/merchants/signing-keys/${kid}`, {
    apiKey,
    headers: { 'Key-Change-Proof': await proof(apiKey, by, 'revoke-key', kid) },
  });

/** The kid's leaves, each checked with an inclusion proof against the head's root. */
async function loggedEvents(kid: string) {
  const deps = stack.deps;
  const head = await deps.repos.keyLog.head();
  const events = await deps.repos.keyLog.kidEvents(kid);
  const leaves = await Promise.all(
    events.map(async ({ index }) => {
      const [stored] = await deps.repos.keyLog.leaves(index, index + 1);
      const { proof: path } = await inclusionProof(deps, { index, treeSize: head.treeSize });
      const verified = verifyInclusion(
        index,
        head.treeSize,
        leafHash(Buffer.from(stored!.leaf)),
        path.map((hash) => Buffer.from(hash, 'base64')),
        Buffer.from(head.rootHash, 'base64'),
      );
      expect(verified).toBe(true);
      return JSON.parse(stored!.leaf) as {
        merchantClientId: string;
        kid: string;
        event: string;
        index: number;
      };
    }),
  );
  return leaves.map(({ merchantClientId, event, kid: named }) => ({ merchantClientId, event, kid: named }));
}

describe('key events go into the log', () => {
  it('registration and revocation each append a leaf naming the client and kid, with a verifying proof', async () => {
    const merchant = await stack.apiKey(['merchant']);
    const first = await generateSigningKey();
    const second = await generateSigningKey({ algorithm: 'ES256' });
    expect((await register(merchant.apiKey, first)).status).toBe(201);
    expect((await register(merchant.apiKey, second, first)).status).toBe(201);
    expect((await revoke(merchant.apiKey, first.kid, first)).status).toBe(200);
    // Revoking again changes nothing, so logs nothing.
    expect((await revoke(merchant.apiKey, first.kid, second)).status).toBe(200);
    expect(await loggedEvents(first.kid)).toEqual([
      { merchantClientId: merchant.clientId, event: 'registered', kid: first.kid },
      { merchantClientId: merchant.clientId, event: 'revoked', kid: first.kid },
    ]);
    expect(await loggedEvents(second.kid)).toEqual([
      { merchantClientId: merchant.clientId, event: 'registered', kid: second.kid },
    ]);
    // The leaf carries the public key as registered, in canonical JSON.
    const { index } = (await stack.deps.repos.keyLog.kidEvents(second.kid))[0]!;
    const [stored] = await stack.deps.repos.keyLog.leaves(index, index + 1);
    const leaf = JSON.parse(stored!.leaf) as { jwk: Record<string, string> };
    expect(stored!.leaf).toBe(canonicalJson(leaf));
    expect(leaf.jwk).toEqual(second.publicJwk);
  });

  it('a crash between the log and the key store serves nothing unlogged, and the retry logs nothing twice', async () => {
    const merchant = await stack.apiKey(['merchant']);
    const key = await generateSigningKey();
    const issuer = await stack.apiKey(['issuer']);
    const store = jest
      .spyOn(stack.deps.repos.merchantKeys, 'register')
      .mockRejectedValueOnce(new Error('the process died here'));
    try {
      expect((await register(merchant.apiKey, key)).status).toBe(500);
    } finally {
      store.mockRestore();
    }
    // Logged (the merchant can see it), but never served.
    expect(await loggedEvents(key.kid)).toEqual([
      { merchantClientId: merchant.clientId, event: 'registered', kid: key.kid },
    ]);
    const unserved = await stack.request<ErrorBody>('GET', `/api/v1/merchant-keys/${key.kid}`, {
      apiKey: issuer.apiKey,
    });
    expect(unserved.status).toBe(404);
    // The merchant retries: the key is stored and served, and its registration is in the log once.
    expect((await register(merchant.apiKey, key)).status).toBe(201);
    expect(
      (await stack.request('GET', `/api/v1/merchant-keys/${key.kid}`, { apiKey: issuer.apiKey })).status,
    ).toBe(200);
    expect(await loggedEvents(key.kid)).toHaveLength(1);

    // The same for a revocation: logged first, so a crash leaves the key as it was until the retry.
    const revokeStore = jest
      .spyOn(stack.deps.repos.merchantKeys, 'revoke')
      .mockRejectedValueOnce(new Error('the process died here'));
    try {
      expect((await revoke(merchant.apiKey, key.kid, key)).status).toBe(500);
    } finally {
      revokeStore.mockRestore();
    }
    expect((await revoke(merchant.apiKey, key.kid, key)).status).toBe(200);
    expect((await loggedEvents(key.kid)).map((event) => event.event)).toEqual(['registered', 'revoked']);
  });
});
