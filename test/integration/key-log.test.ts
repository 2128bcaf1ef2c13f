import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runKeyLogCommand } from '../../scripts/admin-key-log.js';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  createClient,
  fetchKeyLogEvidence,
  generateSigningKey,
  ReceiptSignatureError,
  signKeyProof,
  signReceipt,
  toDigitalReceipt,
  verifyReceiptSignature,
  watchMerchantKeys,
  type SigningKey,
} from '@receipt-service/sdk';
import { flattenedReceipt } from '../support/fixtures.js';
import { LocalLogSigningKey } from '../../local/log-signing-key.js';
import { signTreeHead } from '../../lib/key-log/tree-head.js';
import { canonicalJson, type KeyLogLeaf } from '@receipt-service/receipt-core';
import { inclusionProof } from '../../lib/key-log/log.js';
import { leafHash, verifyConsistency, verifyInclusion } from '../../lib/key-log/merkle.js';
import { verifyTreeHeadWithJose as verifyTreeHead } from '../support/tree-head.js';
import type { JWK } from 'jose';
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

type Leaf = KeyLogLeaf;
interface SignedHead {
  treeSize: number;
  rootHash: string;
  timestamp: number;
  signature: string;
}

const get = <T>(path: string) => stack.request<T & ErrorBody>('GET', path);

/** The head as the public routes give it, its signature checked under the served log key. */
async function verifiedHead() {
  const key = await get<Data<JWK>>('/api/v1/key-log/public-key');
  expect(key.status).toBe(200);
  const head = await get<Data<SignedHead>>('/api/v1/key-log/tree-head');
  expect(head.status).toBe(200);
  const signed = await verifyTreeHead(head.json.data.signature, key.json.data);
  expect(signed).toEqual({
    treeSize: head.json.data.treeSize,
    rootHash: head.json.data.rootHash,
    timestamp: head.json.data.timestamp,
  });
  return signed!;
}

const b64 = (hash: string) => Buffer.from(hash, 'base64');

describe('the public key-log routes', () => {
  it('find each registration and revocation by kid with a proof that verifies under the signed head', async () => {
    const merchant = await stack.apiKey(['merchant']);
    const first = await generateSigningKey();
    const second = await generateSigningKey({ algorithm: 'ES256' });
    expect((await register(merchant.apiKey, first)).status).toBe(201);
    const before = await verifiedHead();
    expect((await register(merchant.apiKey, second, first)).status).toBe(201);
    expect((await revoke(merchant.apiKey, first.kid, second)).status).toBe(200);
    const head = await verifiedHead();

    for (const [key, events] of [
      [first, ['registered', 'revoked']],
      [second, ['registered']],
    ] as const) {
      const reply = await get<Data<{ entries: { leaf: Leaf; proof: string[] }[] }>>(
        `/api/v1/key-log/proof/inclusion?kid=${key.kid}&treeSize=${head.treeSize}`,
      );
      expect(reply.status).toBe(200);
      expect(reply.headers.get('cache-control')).toBe('public, max-age=3600');
      expect(reply.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
      expect(
        reply.json.data.entries.map(({ leaf }) => [leaf.kid, leaf.merchantClientId, leaf.event]),
      ).toEqual(events.map((event) => [key.kid, merchant.clientId, event]));
      for (const { leaf, proof } of reply.json.data.entries) {
        const hash = leafHash(Buffer.from(canonicalJson(leaf)));
        expect(verifyInclusion(leaf.index, head.treeSize, hash, proof.map(b64), b64(head.rootHash))).toBe(
          true,
        );
        // An altered leaf does not verify.
        const altered = leafHash(Buffer.from(canonicalJson({ ...leaf, merchantClientId: 'someone-else' })));
        expect(verifyInclusion(leaf.index, head.treeSize, altered, proof.map(b64), b64(head.rootHash))).toBe(
          false,
        );
      }
    }

    const consistency = await get<Data<{ proof: string[] }>>(
      `/api/v1/key-log/proof/consistency?first=${before.treeSize}&second=${head.treeSize}`,
    );
    expect(consistency.status).toBe(200);
    expect(
      verifyConsistency(
        before.treeSize,
        head.treeSize,
        consistency.json.data.proof.map(b64),
        b64(before.rootHash),
        b64(head.rootHash),
      ),
    ).toBe(true);

    // The entries page shows the same leaves, the last three of the log, in order.
    const start = head.treeSize - 3;
    const page = await get<Data<{ entries: Leaf[] }>>(
      `/api/v1/key-log/entries?start=${start}&end=${head.treeSize}`,
    );
    expect(page.status).toBe(200);
    expect(page.json.data.entries.map((leaf) => [leaf.index, leaf.kid, leaf.event])).toEqual([
      [start, first.kid, 'registered'],
      [start + 1, second.kid, 'registered'],
      [start + 2, first.kid, 'revoked'],
    ]);
  });

  it('refuses bad parameters with 400 naming the field, and an unknown kid with 404', async () => {
    const head = await verifiedHead();
    const cases: [string, string][] = [
      ['/api/v1/key-log/entries?start=0&end=abc', 'end'],
      ['/api/v1/key-log/entries?start=-1&end=1', 'start'],
      [`/api/v1/key-log/entries?start=0&end=${head.treeSize + 1}`, 'end'],
      ['/api/v1/key-log/entries?start=0&end=101', 'end'],
      ['/api/v1/key-log/proof/inclusion?kid=short&treeSize=1', 'kid'],
      [`/api/v1/key-log/proof/inclusion?kid=${'A'.repeat(43)}&treeSize=${head.treeSize + 1}`, 'treeSize'],
      ['/api/v1/key-log/proof/consistency?first=0&second=1', 'first'],
      [`/api/v1/key-log/proof/consistency?first=1&second=${head.treeSize + 1}`, 'second'],
      ['/api/v1/merchants/not-a-uuid/jwks.json', 'merchantClientId'],
      [`/api/v1/key-log/proof/inclusion?treeSize=${head.treeSize}`, 'kid'],
      ['/api/v1/key-log/proof/consistency?first=1', 'second'],
    ];
    for (const [path, field] of cases) {
      const reply = await get<unknown>(path);
      expect([path, reply.status, reply.json.error.code]).toEqual([path, 400, 'INVALID_REQUEST']);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      const fields = (reply.json.error.details?.fields ?? []) as { field: string }[];
      expect(fields.map((problem) => problem.field)).toContain(field);
    }
    const unknownKid = await get<unknown>(
      `/api/v1/key-log/proof/inclusion?kid=${'A'.repeat(43)}&treeSize=${head.treeSize}`,
    );
    expect([unknownKid.status, unknownKid.json.error.code]).toEqual([404, 'not_found']);
    // Each document and proof is a path of its own: another is no route at all.
    for (const path of [
      '/api/v1/key-log/proof/exclusion?first=1&second=1',
      '/api/v1/key-log/not-a-document',
    ]) {
      const unknown = await get<unknown>(path);
      expect([path, unknown.status, unknown.json.error.code]).toEqual([path, 404, 'not_found']);
    }
    const unknownMerchant = await get<unknown>(`/api/v1/merchants/${randomUUID()}/jwks.json`);
    expect([unknownMerchant.status, unknownMerchant.json.error.code]).toEqual([404, 'not_found']);
  });
});

describe('GET /merchants/{merchantClientId}/jwks.json', () => {
  it('serves exactly the active keys, with no API key; a revoked key drops out and stays in the log', async () => {
    const merchant = await stack.apiKey(['merchant']);
    const first = await generateSigningKey();
    const second = await generateSigningKey({ algorithm: 'ES256' });
    const third = await generateSigningKey();
    expect((await register(merchant.apiKey, first)).status).toBe(201);
    expect((await register(merchant.apiKey, second, first)).status).toBe(201);
    expect((await register(merchant.apiKey, third, second)).status).toBe(201);
    expect((await revoke(merchant.apiKey, first.kid, second)).status).toBe(200);
    const jwks = await stack.request<{ keys: { kid: string; alg: string; use: string }[] }>(
      'GET',
      `/api/v1/merchants/${merchant.clientId}/jwks.json`,
    );
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=300');
    const byKid = (a: { kid: string }, b: { kid: string }) => a.kid.localeCompare(b.kid);
    expect(jwks.json.keys.toSorted(byKid)).toEqual(
      [
        { ...second.publicJwk, kid: second.kid, alg: 'ES256', use: 'sig' },
        { ...third.publicJwk, kid: third.kid, alg: 'EdDSA', use: 'sig' },
      ].toSorted(byKid),
    );
    const head = await verifiedHead();
    const logged = await get<Data<{ entries: { leaf: Leaf }[] }>>(
      `/api/v1/key-log/proof/inclusion?kid=${first.kid}&treeSize=${head.treeSize}`,
    );
    expect(logged.json.data.entries.map(({ leaf }) => leaf.event)).toEqual(['registered', 'revoked']);
    // Every key of the set is in the log, under this merchant.
    for (const key of jwks.json.keys) {
      const reply = await get<Data<{ entries: { leaf: Leaf }[] }>>(
        `/api/v1/key-log/proof/inclusion?kid=${key.kid}&treeSize=${head.treeSize}`,
      );
      expect(reply.json.data.entries.map(({ leaf }) => [leaf.merchantClientId, leaf.event])).toEqual([
        [merchant.clientId, 'registered'],
      ]);
    }
  });
});

describe('the SDK and the key log', () => {
  /** The log key as an app pins it (fetched once here; shipped with the app in practice). */
  const pinnedLogKey = async () =>
    (await get<Data<JWK>>('/api/v1/key-log/public-key')).json.data as {
      kty: string;
      crv: string;
      x: string;
      y: string;
    };
  const signedReceipt = async (key: SigningKey) => {
    const receipt = toDigitalReceipt(flattenedReceipt({ transactionDate: '2026-11-21T09:15:00Z' }) as never);
    return {
      ...receipt,
      merchantSignature: { kid: key.kid, jws: await signReceipt(receipt, key.privateKey, key.kid) },
    };
  };
  const reasonOf = (promise: Promise<unknown>) =>
    promise.then(
      () => 'verified',
      (error: unknown) => (error instanceof ReceiptSignatureError ? error.reason : String(error)),
    );

  it('verifyReceiptSignature demands the kid in the log under a signed head that extends the kept one', async () => {
    const client = createClient({ baseUrl: stack.url });
    const logPublicKey = await pinnedLogKey();
    const kept = (await get<Data<SignedHead>>('/api/v1/key-log/tree-head')).json.data.signature;
    const merchant = await stack.apiKey(['merchant']);
    const logged = await generateSigningKey();
    expect((await register(merchant.apiKey, logged)).status).toBe(201);

    const receipt = await signedReceipt(logged);
    const evidence = await fetchKeyLogEvidence(client, logged.kid, { logPublicKey, kept });
    const verified = await verifyReceiptSignature(receipt, logged.publicJwk, { keyLog: evidence });
    expect(verified.kid).toBe(logged.kid);
    expect(verified.treeHead?.treeSize).toBeGreaterThan(0);

    // A key the service never logged (whoever holds it, and whatever directory serves it) is refused.
    const unlogged = await generateSigningKey();
    const forged = await signedReceipt(unlogged);
    const none = await fetchKeyLogEvidence(client, unlogged.kid, { logPublicKey, kept });
    expect(await reasonOf(verifyReceiptSignature(forged, unlogged.publicJwk, { keyLog: none }))).toBe(
      'not_logged',
    );
    // Another key's leaves do not vouch for it.
    expect(
      await reasonOf(
        verifyReceiptSignature(forged, unlogged.publicJwk, { keyLog: { ...evidence, kept: undefined } }),
      ),
    ).toBe('not_logged');
    // A head not signed by the pinned log key, an altered leaf, and a forked kept head are refused.
    const impostor = LocalLogSigningKey.inMemory();
    const head = (await get<Data<SignedHead>>('/api/v1/key-log/tree-head')).json.data;
    const foreignHead = await signTreeHead(impostor, {
      treeSize: head.treeSize,
      rootHash: head.rootHash,
      timestamp: 1,
    });
    expect(
      await reasonOf(
        verifyReceiptSignature(receipt, logged.publicJwk, { keyLog: { ...evidence, treeHead: foreignHead } }),
      ),
    ).toBe('not_logged');
    const altered = {
      ...evidence,
      inclusion: {
        entries: evidence.inclusion.entries.map((entry) => ({
          ...entry,
          leaf: { ...entry.leaf, at: '2020-01-01T00:00:00.000Z' },
        })),
      },
    };
    expect(await reasonOf(verifyReceiptSignature(receipt, logged.publicJwk, { keyLog: altered }))).toBe(
      'not_logged',
    );
    // A kept head signed by the log key itself, of another history: the log forked, and it shows.
    const forkedKept = await signTreeHead(stack.deps.logKey!, {
      treeSize: 1,
      rootHash: Buffer.alloc(32).toString('base64'),
      timestamp: 1,
    });
    expect(
      await reasonOf(
        verifyReceiptSignature(receipt, logged.publicJwk, {
          keyLog: { ...evidence, kept: { treeHead: forkedKept, proof: evidence.kept!.proof } },
        }),
      ),
    ).toBe('not_logged');
  });

  it('watchMerchantKeys lists every key event under a merchant since a kept head, checked against the log', async () => {
    const client = createClient({ baseUrl: stack.url });
    const logPublicKey = await pinnedLogKey();
    const merchant = await stack.apiKey(['merchant']);
    const before = await generateSigningKey();
    expect((await register(merchant.apiKey, before)).status).toBe(201);
    const since = (await get<Data<SignedHead>>('/api/v1/key-log/tree-head')).json.data.signature;
    const added = await generateSigningKey();
    expect((await register(merchant.apiKey, added, before)).status).toBe(201);
    expect((await revoke(merchant.apiKey, before.kid, added)).status).toBe(200);
    const watched = await watchMerchantKeys(client, merchant.clientId, since, { logPublicKey });
    expect(watched.events.map((event) => [event.kid, event.event])).toEqual([
      [added.kid, 'registered'],
      [before.kid, 'revoked'],
    ]);
    // The admin CLI prints the same events, and keeps the pinned key and the head for the next watch.
    const state = join(mkdtempSync(join(tmpdir(), 'key-log-watch-')), 'state.json');
    const argv = ['key-log', 'watch', '--merchant', merchant.clientId, '--url', stack.url, '--state', state];
    const printed: string[] = [];
    const first = (await runKeyLogCommand(argv, (line) => printed.push(line))) as {
      events: { kid: string }[];
    };
    expect(first.events.map((event) => event.kid)).toEqual([before.kid, added.kid, before.kid]);
    expect(printed.at(-1)).toContain('3 key event(s) since the last watch');
    expect(printed[0]).toContain(`registered  ${before.kid}`);
    const again = (await runKeyLogCommand(argv, () => undefined)) as { events: unknown[] };
    expect(again.events).toEqual([]);

    const everything = await watchMerchantKeys(client, merchant.clientId, null, { logPublicKey });
    expect(everything.events.map((event) => [event.kid, event.event])).toEqual([
      [before.kid, 'registered'],
      [added.kid, 'registered'],
      [before.kid, 'revoked'],
    ]);
  });
});
