import { randomUUID } from 'node:crypto';
import { BatchWriteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ERASE_RECEIPTS_PER_CALL, eraseUser } from '../../lib/users/lifecycle.js';
import { tableDefinitions, type TableKey } from '../../lib/kernel/tables.js';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; details?: Record<string, unknown> };
}
interface Envelope {
  receiptId: string;
  keyId: string;
  isEscrowed: boolean;
  keyBundle: { keyId: string };
}
interface GeneratedKeys {
  keyId: string;
  publicKey: string;
  privateKey: string;
}
type Client = { apiKey: string; clientId: string; keyId: string };

describe('key lifecycle over HTTP: key rotation, user erasure, token revocation', () => {
  let stack: TestStack;
  let merchant: Client;
  let issuer: Client;
  let otherIssuer: Client;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
  });

  afterAll(async () => {
    await stack?.close();
  });

  const encrypt = async (hashedPan: string) => {
    const receipt = sampleReceipt();
    const reply = await stack.request<Data<Envelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'cardholder@example.com' },
        recipientHashedPan: hashedPan,
      },
    });
    expect(reply.status).toBe(200);
    return { receipt, envelope: reply.json.data };
  };

  const decrypt = (envelope: unknown, accessTokenId: string, privateKey: string, apiKey = issuer.apiKey) =>
    stack.request<Data<unknown>>('POST', '/api/v1/receipts/decrypt', {
      apiKey,
      body: { envelope, accessTokenId, privateKey },
    });

  const generateKeys = async (apiKey = issuer.apiKey) => {
    const reply = await stack.request<Data<GeneratedKeys>>('POST', '/api/v1/onboarding/generate-keys', {
      apiKey,
    });
    expect(reply.status).toBe(200);
    return reply.json.data;
  };

  const rotate = (userId: string, keyId: string, apiKey = issuer.apiKey) =>
    stack.request<Data<{ keyId: string; tokensRevoked: number }> & ErrorBody>(
      'POST',
      `/api/v1/users/${userId}/key`,
      { apiKey, body: { keyId } },
    );

  const erase = (userId: string, apiKey = issuer.apiKey) =>
    stack.request<Data<{ status: string; receiptsDeleted: number; complete: boolean }> & ErrorBody>(
      'DELETE',
      `/api/v1/users/${userId}`,
      { apiKey },
    );

  const revoke = (tokenId: string, apiKey = issuer.apiKey) =>
    stack.request<Data<{ userId: string; keyId: string }> & ErrorBody>(
      'DELETE',
      `/api/v1/keys/tokens/${tokenId}`,
      {
        apiKey,
      },
    );

  const grant = (user: { userId: string; keyId: string }, apiKey = issuer.apiKey) =>
    stack.request<ErrorBody>('POST', '/api/v1/keys/grant-access', {
      apiKey,
      body: { userId: user.userId, keyId: user.keyId },
    });

  /** The uniform decrypt refusal, from a token id nobody was granted. */
  const uniformRefusal = async (envelope: unknown, privateKey: string) => {
    const reply = await decrypt(envelope, randomUUID(), privateKey);
    expect(reply.status).toBe(403);
    return withoutRequestIdentity(reply.text);
  };

  const scan = async (key: TableKey): Promise<Record<string, unknown>[]> => {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await stack.deps.dynamo.doc.send(
        new ScanCommand({ TableName: stack.deps.config.tables[key], ExclusiveStartKey: startKey }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  };

  /** A foreign resource must answer exactly like a missing one: same status, code, message and details. */
  const expectSameAnswer = (
    foreign: { status: number; text: string },
    missing: { status: number; text: string },
  ) => {
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(withoutRequestIdentity(foreign.text)).toEqual(withoutRequestIdentity(missing.text));
  };

  describe('POST /api/v1/users/{userId}/key', () => {
    let user: OnboardedUser;
    let next: GeneratedKeys;
    let oldToken: string;
    let oldEnvelope: Envelope;

    beforeAll(async () => {
      user = await onboardUser(stack, issuer.apiKey);
      oldToken = await grantToken(stack, issuer.apiKey, user);
      ({ envelope: oldEnvelope } = await encrypt(user.hashedPan));
      expect((await decrypt(oldEnvelope, oldToken, user.privateKey)).status).toBe(200);
      next = await generateKeys();
    });

    it("refuses another issuer's user exactly like a missing one, and changes nothing", async () => {
      const otherKeys = await generateKeys(otherIssuer.apiKey);
      expectSameAnswer(
        await rotate(user.userId, otherKeys.keyId, otherIssuer.apiKey),
        await rotate(randomUUID(), otherKeys.keyId, otherIssuer.apiKey),
      );
      expect((await rotate(user.userId, otherKeys.keyId, otherIssuer.apiKey)).json.error.code).toBe(
        'not_found',
      );
      // The user still has its key: the old token still opens its receipt.
      expect((await decrypt(oldEnvelope, oldToken, user.privateKey)).status).toBe(200);
    });

    it("refuses another issuer's key, a key already bound, and a malformed userId", async () => {
      const otherKeys = await generateKeys(otherIssuer.apiKey);
      const foreignKey = await rotate(user.userId, otherKeys.keyId);
      expect([foreignKey.status, foreignKey.json.error.code]).toEqual([404, 'KEY_NOT_FOUND']);
      const someoneElse = await onboardUser(stack, issuer.apiKey);
      const bound = await rotate(user.userId, someoneElse.keyId);
      expect([bound.status, bound.json.error.code]).toEqual([409, 'ALREADY_REGISTERED']);
      const own = await rotate(user.userId, user.keyId);
      expect([own.status, own.json.error.code]).toEqual([409, 'ALREADY_REGISTERED']);
      const malformed = await rotate('not-a-uuid', next.keyId);
      expect([malformed.status, malformed.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    });

    it('binds the new key: the old token is refused, new receipts are wrapped for the new key and decrypt with it', async () => {
      const rotated = await rotate(user.userId, next.keyId);
      expect(rotated.status).toBe(200);
      expect(rotated.json.data).toMatchObject({ userId: user.userId, keyId: next.keyId, status: 'active' });
      expect(rotated.json.data.tokensRevoked).toBe(1);

      const refusal = await uniformRefusal(oldEnvelope, user.privateKey);
      const oldTokenReply = await decrypt(oldEnvelope, oldToken, user.privateKey);
      expect(withoutRequestIdentity(oldTokenReply.text)).toEqual(refusal);
      // Tokens for the old key are no longer granted.
      const oldGrant = await grant(user);
      expect([oldGrant.status, oldGrant.json.error.code]).toEqual([403, 'GRANT_ERROR']);

      const { receipt, envelope } = await encrypt(user.hashedPan);
      expect(envelope.keyId).toBe(next.keyId);
      expect(envelope.keyBundle.keyId).toBe(next.keyId);
      const newToken = await grantToken(stack, issuer.apiKey, { userId: user.userId, keyId: next.keyId });
      const opened = await decrypt(envelope, newToken, next.privateKey);
      expect(opened.status).toBe(200);
      expect(opened.json.data).toEqual(receipt);
      // The old private key does not open the new receipt, even with a live token.
      expect(withoutRequestIdentity((await decrypt(envelope, newToken, user.privateKey)).text)).toEqual(
        refusal,
      );
      // Receipts wrapped for the old key stay as they were: the new token does not open them.
      expect(withoutRequestIdentity((await decrypt(oldEnvelope, newToken, next.privateKey)).text)).toEqual(
        refusal,
      );

      const audit = await stack.deps.audit.forClient(issuer.clientId, 1000);
      expect(audit).toContainEqual(
        expect.objectContaining({
          action: 'user.rekey',
          outcome: 'success',
          userId: user.userId,
          keyId: next.keyId,
        }),
      );
    });

    it('refuses a token for the old key that outlived the rotation (granted while it ran)', async () => {
      // A grant that read the user before the rotation committed writes its token after it: the
      // token's key is then no longer the user's, and decrypt must see that on its own.
      const tokenId = randomUUID();
      const now = stack.clock.now();
      const granted = await stack.deps.repos.accessTokens.grant(
        tokenId,
        {
          userId: user.userId,
          keyId: user.keyId,
          clientId: issuer.clientId,
          purpose: 'decrypt',
          grantedAt: now.toISOString(),
          expiresAt: new Date(now.getTime() + 120_000).toISOString(),
          sourceIp: '127.0.0.1',
        },
        now,
      );
      expect(granted).toEqual({ granted: true });
      const refusal = await uniformRefusal(oldEnvelope, user.privateKey);
      // Audit records sort by time: a later second makes this decrypt's record the newest.
      stack.clock.advance(1000);
      const reply = await decrypt(oldEnvelope, tokenId, user.privateKey);
      expect(withoutRequestIdentity(reply.text)).toEqual(refusal);
      // Refused by the key check itself, before the private key is even looked at.
      const [latest] = await stack.deps.audit.forClient(issuer.clientId, 1);
      expect(latest).toMatchObject({
        action: 'receipt.decrypt',
        outcome: 'failure',
        reason: 'access token is for another key',
        userId: user.userId,
      });
    });
  });

  describe('DELETE /api/v1/users/{userId}', () => {
    let user: OnboardedUser;
    let token: string;
    let paymentId: string;
    let envelope: Envelope;

    beforeAll(async () => {
      user = await onboardUser(stack, issuer.apiKey, newHashedPan());
      const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
      const created = await stack.request<Data<{ paymentId: string }>>(
        'POST',
        '/api/v1/payments/gateway_a/create',
        {
          apiKey: merchant.apiKey,
          body: { amount: body.totalAmount, ...body },
        },
      );
      expect(created.status).toBe(200);
      paymentId = created.json.data.paymentId;
      ({ envelope } = await encrypt(user.hashedPan));
      token = await grantToken(stack, issuer.apiKey, user);
    });

    const decryptPayment = (accessTokenId: string) =>
      stack.request<Data<unknown>>('POST', '/api/v1/payments/decrypt', {
        apiKey: issuer.apiKey,
        body: { paymentId, gateway: 'gateway_a', accessTokenId, privateKey: user.privateKey },
      });

    const itemsOf = async (userId: string) => ({
      receipts: (await scan('receipts')).filter(
        (item) =>
          item.recipientUserId === userId ||
          (item.envelope as Envelope | undefined)?.keyId === user.keyId ||
          JSON.stringify(item).includes(user.keyId),
      ),
      users: (await scan('users')).filter(
        (item) => item.userId === userId && !String(item.pk).startsWith('ERASED#'),
      ),
      keyPairs: (await scan('keyPairs')).filter(
        (item) => item.keyId === user.keyId || item.userId === userId,
      ),
      accessTokens: (await scan('accessTokens')).filter(
        (item) => item.userId === userId || String(item.pk).startsWith(`SLOT#${userId}#`),
      ),
    });

    it("refuses another issuer's user exactly like a missing one, and erases nothing", async () => {
      expectSameAnswer(
        await erase(user.userId, otherIssuer.apiKey),
        await erase(randomUUID(), otherIssuer.apiKey),
      );
      expect((await erase(user.userId, otherIssuer.apiKey)).json.error.code).toBe('not_found');
      expect((await decryptPayment(token)).status).toBe(200);
      expect((await itemsOf(user.userId)).receipts).toHaveLength(2);
    });

    it('erases the user, its card guard, key binding, tokens and every envelope wrapped for it', async () => {
      const refs = (await itemsOf(user.userId)).receipts.map(
        (item) => `${String(item.merchantClientId)}#${String(item.receiptId)}`,
      );
      const evidenceOf = async () =>
        (await scan('evidence')).filter((item) => refs.includes(String(item.receiptRef)));
      // Paid with the card, so each has its evidence entries (issue 20), which go with it.
      expect((await evidenceOf()).length).toBeGreaterThan(0);
      const erased = await erase(user.userId);
      expect(erased.status).toBe(200);
      expect(erased.json.data).toMatchObject({ status: 'erased', receiptsDeleted: 2, complete: true });

      const afterwards = await decryptPayment(token);
      expect([403, 404]).toContain(afterwards.status);
      const refusal = await uniformRefusal(envelope, user.privateKey);
      expect(withoutRequestIdentity((await decrypt(envelope, token, user.privateKey)).text)).toEqual(refusal);
      const regrant = await grant(user);
      expect([regrant.status, regrant.json.error.code]).toEqual([403, 'GRANT_ERROR']);

      expect(await itemsOf(user.userId)).toEqual({ receipts: [], users: [], keyPairs: [], accessTokens: [] });
      expect(await evidenceOf()).toEqual([]);

      const audit = await stack.deps.audit.forClient(issuer.clientId, 1000);
      expect(audit).toContainEqual(
        expect.objectContaining({ action: 'user.erase', outcome: 'success', userId: user.userId }),
      );
    });

    it('can be repeated by the client that erased the user, and by nobody else', async () => {
      const again = await erase(user.userId);
      expect(again.status).toBe(200);
      expect(again.json.data).toMatchObject({ status: 'erased', receiptsDeleted: 0, complete: true });
      expectSameAnswer(
        await erase(user.userId, otherIssuer.apiKey),
        await erase(randomUUID(), otherIssuer.apiKey),
      );
    });

    it('lets the card register again, and later receipts go to the new user', async () => {
      const again = await onboardUser(stack, issuer.apiKey, user.hashedPan);
      expect(again.userId).not.toBe(user.userId);
      const { receipt, envelope: fresh } = await encrypt(user.hashedPan);
      expect(fresh.keyId).toBe(again.keyId);
      const opened = await decrypt(fresh, await grantToken(stack, issuer.apiKey, again), again.privateKey);
      expect(opened.json.data).toEqual(receipt);
    });
  });

  it('erases at most ERASE_RECEIPTS_PER_CALL receipts per call, and less when short of time; the same DELETE carries on', async () => {
    const user = await onboardUser(stack, issuer.apiKey);
    // Stored rows, not HTTP encrypts: only their index attributes matter to the sweep, and 501 real
    // encryptions would only slow the test.
    const { partitionKey, sortKey } = tableDefinitions.receipts as { partitionKey: string; sortKey?: string };
    const rows = Array.from({ length: ERASE_RECEIPTS_PER_CALL + 1 }, (_, index) => {
      const receiptId = randomUUID();
      return {
        [partitionKey]: partitionKey === 'receiptId' ? receiptId : merchant.clientId,
        ...(sortKey ? { [sortKey]: receiptId } : {}),
        receiptId,
        merchantClientId: merchant.clientId,
        recipientUserId: user.userId,
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
        envelope: { receiptId, keyId: user.keyId },
      };
    });
    for (let start = 0; start < rows.length; start += 25) {
      const batch = rows.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
      const written = await stack.deps.dynamo.doc.send(
        new BatchWriteCommand({ RequestItems: { [stack.deps.config.tables.receipts as string]: batch } }),
      );
      expect(written.UnprocessedItems ?? {}).toEqual({});
    }

    // With no time left a call deletes nothing and says so, rather than run into its timeout.
    const outOfTime = await eraseUser(stack.deps, {
      userId: user.userId,
      caller: {
        clientId: issuer.clientId,
        keyId: issuer.keyId,
        name: 'issuer',
        roles: ['issuer'],
        tier: 'enterprise',
      },
      requestId: randomUUID(),
      sourceIp: '127.0.0.1',
      remainingMs: () => 0,
    });
    expect(outOfTime).toMatchObject({ status: 'erased', receiptsDeleted: 0, complete: false });

    const first = await erase(user.userId);
    expect(first.status).toBe(200);
    expect(first.json.data).toMatchObject({ receiptsDeleted: ERASE_RECEIPTS_PER_CALL, complete: false });
    const second = await erase(user.userId);
    expect(second.json.data).toMatchObject({ receiptsDeleted: 1, complete: true });
    const left = (await scan('receipts')).filter((item) => item.recipientUserId === user.userId);
    expect(left).toEqual([]);
  });

  describe('DELETE /api/v1/keys/tokens/{tokenId}', () => {
    let user: OnboardedUser;
    let envelope: Envelope;
    let tokens: string[];

    beforeAll(async () => {
      user = await onboardUser(stack, issuer.apiKey);
      ({ envelope } = await encrypt(user.hashedPan));
      tokens = [];
      for (let i = 0; i < 5; i += 1) tokens.push(await grantToken(stack, issuer.apiKey, user));
      const sixth = await grant(user);
      expect([sixth.status, sixth.json.error.code]).toEqual([429, 'GRANT_ERROR']);
    });

    it("refuses another issuer's token exactly like a missing one, and the token keeps working", async () => {
      const [first] = tokens as [string];
      expectSameAnswer(
        await revoke(first, otherIssuer.apiKey),
        await revoke(randomUUID(), otherIssuer.apiKey),
      );
      expect((await decrypt(envelope, first, user.privateKey)).status).toBe(200);
      expect((await grant(user)).status).toBe(429);
    });

    it('refuses a malformed token id with a 400 naming it', async () => {
      const reply = await revoke('not-a-token');
      expect(reply.status).toBe(400);
      expect(reply.json.error.details?.fields).toEqual([{ field: 'tokenId', message: expect.any(String) }]);
    });

    it('revokes at once: the token is refused, its slot goes to the next grant', async () => {
      const [first, second] = tokens as [string, string];
      const revoked = await revoke(first);
      expect(revoked.status).toBe(200);
      expect(revoked.json.data).toMatchObject({ userId: user.userId, keyId: user.keyId });

      const refusal = await uniformRefusal(envelope, user.privateKey);
      expect(withoutRequestIdentity((await decrypt(envelope, first, user.privateKey)).text)).toEqual(refusal);
      expect((await decrypt(envelope, second, user.privateKey)).status).toBe(200);

      const next = await grant(user);
      expect(next.status).toBe(200);
      expect((await grant(user)).status).toBe(429);

      const again = await revoke(first);
      expect([again.status, again.json.error.code]).toEqual([404, 'not_found']);
      const audit = await stack.deps.audit.forClient(issuer.clientId, 1000);
      expect(audit).toContainEqual(
        expect.objectContaining({ action: 'access.revoke', outcome: 'success', userId: user.userId }),
      );
    });
  });
});
