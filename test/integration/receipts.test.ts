import { createPrivateKey, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { flattenedDecrypt, importPKCS8 } from 'jose';
import { openEnvelopeWith } from '../../lib/crypto/envelope.js';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { runEscrowKey } from '../support/escrow-key.js';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { captureLogs, expectNoSecretsInEachTestsLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}

const toBase64Url = (value: string) => Buffer.from(value, 'base64').toString('base64url');

const flipBit = (base64: string, bit: number): string => {
  const bytes = Buffer.from(base64, 'base64');
  bytes[Math.floor(bit / 8) % bytes.length]! ^= 1 << (bit % 8);
  return bytes.toString('base64');
};

describe('receipts core over HTTP: keys, users, tokens, encryption, escrow, decryption, transactions', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let merchant: { apiKey: string; clientId: string };
  let issuer: { apiKey: string; clientId: string };
  let otherIssuer: { apiKey: string; clientId: string };
  let user: OnboardedUser;
  const secrets: string[] = [];

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack();
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
    secrets.push(user.privateKey, user.hashedPan);
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  // Each test's own log lines, checked as it ends: no private key, token id, hashed PAN or receipt value.
  expectNoSecretsInEachTestsLogs(() => [
    ...secrets.map((secret, index) => [`secret #${index}`, secret] as const),
    ...['Corner Coffee Roasters', 'Almond croissant', 'Bean Club', 'cardholder@example.com', 'BC-0042'].map(
      (value) => [`receipt value ${value}`, value] as const,
    ),
  ]);

  const encryptNested = async (
    receipt = sampleReceipt(),
    recipientHashedPan: string | null = user.hashedPan,
  ) => {
    const reply = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'cardholder@example.com' },
        ...(recipientHashedPan ? { recipientHashedPan } : {}),
      },
    });
    expect(reply.status).toBe(200);
    return { receipt, envelope: reply.json.data };
  };

  const decrypt = (
    envelope: unknown,
    accessTokenId: string,
    privateKey = user.privateKey,
    apiKey = issuer.apiKey,
  ) =>
    stack.request<Data<unknown>>('POST', '/api/v1/receipts/decrypt', {
      apiKey,
      body: { envelope, accessTokenId, privateKey },
    });

  it('runs the flow generate-keys → register → encrypt → grant-access → decrypt and returns the same receipt', async () => {
    const { receipt, envelope } = await encryptNested();
    expect(envelope).toMatchObject({
      isEscrowed: false,
      escrowKeyId: null,
      keyId: user.keyId,
      receiptId: receipt.receiptId,
    });
    expect(envelope.keyBundle).toMatchObject({ keyId: user.keyId, algorithm: 'RSA-OAEP-256' });
    expect(Date.parse(envelope.expiresAt)).toBeGreaterThan(Date.parse(envelope.createdAt));
    const grant = await stack.request<
      Data<{ tokenId: string; expiresAt: string; grantedAt: string; purpose: string; sourceIp: string }>
    >('POST', '/api/v1/keys/grant-access', {
      apiKey: issuer.apiKey,
      body: { userId: user.userId, keyId: user.keyId },
    });
    expect(grant.status).toBe(200);
    expect(grant.headers.get('cache-control')).toBe('no-store');
    const life = Date.parse(grant.json.data.expiresAt) - Date.parse(grant.json.data.grantedAt);
    expect(life).toBeGreaterThanOrEqual(120_000);
    expect(life).toBeLessThanOrEqual(180_000);
    expect(grant.json.data).toMatchObject({ purpose: 'decrypt', sourceIp: '127.0.0.1' });
    secrets.push(grant.json.data.tokenId);
    const opened = await decrypt(envelope, grant.json.data.tokenId);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('cache-control')).toBe('no-store');
    expect(opened.json.data).toEqual(receipt);
    // A token serves several decrypts until it expires.
    expect((await decrypt(envelope, grant.json.data.tokenId)).status).toBe(200);
  });

  it('encrypts the flattened form into a DigitalReceipt, without expiresAt and escrowKeyId in the response', async () => {
    const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
    const reply = await stack.request<Data<Record<string, unknown>>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body,
    });
    expect(reply.status).toBe(200);
    expect(reply.json.data).not.toHaveProperty('expiresAt');
    expect(reply.json.data).not.toHaveProperty('escrowKeyId');
    const token = await grantToken(stack, issuer.apiKey, user);
    const opened = await decrypt(reply.json.data, token);
    expect(opened.status).toBe(200);
    expect(opened.json.data).toMatchObject({
      receiptId: body.receiptId,
      merchant: {
        merchantId: body.merchantId,
        name: 'Corner Coffee Roasters',
        address: { city: 'San Francisco' },
      },
      transaction: {
        transactionId: body.transactionId,
        paymentMethod: 'card',
        cardDetails: { last4: '4242', brand: 'visa' },
      },
      summary: { subtotal: 1425, totalTax: 123, total: 1548, currency: 'USD', itemCount: 2 },
    });
  });

  it('generates plausible items that add up when mockItems is set and items is empty', async () => {
    const body = flattenedReceipt({ items: [], mockItems: true, recipientHashedPan: user.hashedPan });
    const reply = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body,
    });
    expect(reply.status).toBe(200);
    const opened = await decrypt(reply.json.data, await grantToken(stack, issuer.apiKey, user));
    const receipt = opened.json.data as { items: { totalPrice: number; name: string }[] };
    expect(receipt.items.length).toBeGreaterThan(0);
    expect(receipt.items.reduce((sum, item) => sum + item.totalPrice, 0)).toBe(1425);
  });

  it('refuses amounts that do not add up, naming the fields', async () => {
    const reply = await stack.request<{ error: { code: string; details: { fields: { field: string }[] } } }>(
      'POST',
      '/api/v1/receipts/encrypt',
      { apiKey: merchant.apiKey, body: flattenedReceipt({ subtotal: 1000, totalAmount: 5 }) },
    );
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('INVALID_REQUEST');
    expect(reply.json.error.details.fields.map((field) => field.field)).toEqual(
      expect.arrayContaining(['subtotal', 'totalAmount']),
    );
  });

  it('produces envelopes that jose opens as flattened JWE after base64 → base64url', async () => {
    const { receipt, envelope } = await encryptNested();
    const key = await importPKCS8(
      createPrivateKey({ key: Buffer.from(user.privateKey, 'base64'), format: 'der', type: 'pkcs8' })
        .export({ type: 'pkcs8', format: 'pem' })
        .toString(),
      'RSA-OAEP-256',
    );
    const result = await flattenedDecrypt(
      {
        protected: envelope.protected,
        // New envelopes name alg per recipient (docs/ENVELOPE.md): the JWE's unprotected header.
        header: { alg: envelope.keyBundle.algorithm },
        encrypted_key: toBase64Url(envelope.keyBundle.encryptedAesKey),
        iv: toBase64Url(envelope.iv),
        ciphertext: toBase64Url(envelope.ciphertext),
        tag: toBase64Url(envelope.authTag),
      },
      key,
    );
    expect(JSON.parse(new TextDecoder().decode(result.plaintext))).toEqual(receipt);
    expect(result.unprotectedHeader).toEqual({ alg: 'RSA-OAEP-256' });
    expect(result.protectedHeader).toMatchObject({
      enc: 'A256GCM',
      receiptId: receipt.receiptId,
    });
  });

  it('answers every tampered envelope, swapped field, bad token or wrong key with the identical 403', async () => {
    const { envelope } = await encryptNested();
    const token = await grantToken(stack, issuer.apiKey, user);
    stack.clock.advance(1000);
    const expiredToken = await grantToken(stack, issuer.apiKey, user);
    stack.clock.advance(181_000);
    const reference = await decrypt(envelope, expiredToken);
    expect(reference.status).toBe(403);
    const expected = withoutRequestIdentity(reference.text);
    expect(expected).toEqual({
      success: false,
      error: { code: 'DECRYPTION_ERROR', message: expect.any(String) },
    });
    const freshToken = await grantToken(stack, issuer.apiKey, user);
    const other = await encryptNested();
    const stranger = await onboardUser(stack, issuer.apiKey);
    const variants: [string, unknown, string?, string?][] = [];
    for (const field of ['ciphertext', 'iv', 'authTag'] as const) {
      const bits = Buffer.from(envelope[field], 'base64').length * 8;
      for (const bit of [0, 7, Math.floor(bits / 2), bits - 1])
        variants.push([`${field} bit ${bit}`, { ...envelope, [field]: flipBit(envelope[field], bit) }]);
    }
    const keyBits = Buffer.from(envelope.keyBundle.encryptedAesKey, 'base64').length * 8;
    for (const bit of [0, 100, keyBits - 1]) {
      variants.push([
        `encryptedAesKey bit ${bit}`,
        {
          ...envelope,
          keyBundle: {
            ...envelope.keyBundle,
            encryptedAesKey: flipBit(envelope.keyBundle.encryptedAesKey, bit),
          },
        },
      ]);
    }
    const header = Buffer.from(envelope.protected, 'base64url');
    for (const index of [2, Math.floor(header.length / 2), header.length - 3]) {
      const changed = Buffer.from(header);
      changed[index]! ^= 1;
      variants.push([`protected byte ${index}`, { ...envelope, protected: changed.toString('base64url') }]);
    }
    for (const field of ['receiptId', 'merchantId', 'transactionId'] as const) {
      variants.push([`swapped ${field}`, { ...envelope, [field]: other.envelope[field] }]);
    }
    variants.push([
      'protected header of another envelope',
      { ...envelope, protected: other.envelope.protected },
    ]);
    variants.push(['escrowed flag flipped', { ...envelope, isEscrowed: true }]);
    variants.push(['unknown token', envelope, randomUUID()]);
    variants.push(['wrong private key', envelope, freshToken, stranger.privateKey]);
    variants.push(['garbage private key', envelope, freshToken, 'bm90IGEga2V5']);
    for (const [name, candidate, tokenId, privateKey] of variants) {
      const reply = await decrypt(candidate, tokenId ?? freshToken, privateKey);
      expect({ name, status: reply.status }).toEqual({ name, status: 403 });
      expect(withoutRequestIdentity(reply.text)).toEqual(expected);
    }
    expect(token).not.toEqual(freshToken);
    // The untouched envelope still opens with the fresh token: the refusals above were the tampering.
    expect((await decrypt(envelope, freshToken)).status).toBe(200);
  });

  it("refuses another user's token, another client's user and decryption by another client", async () => {
    const { envelope } = await encryptNested();
    const stranger = await onboardUser(stack, issuer.apiKey);
    const strangerToken = await grantToken(stack, issuer.apiKey, stranger);
    const reference = withoutRequestIdentity((await decrypt(envelope, randomUUID())).text);
    const otherUsersToken = await decrypt(envelope, strangerToken, stranger.privateKey);
    expect(otherUsersToken.status).toBe(403);
    expect(withoutRequestIdentity(otherUsersToken.text)).toEqual(reference);
    // Another issuer can neither get a token for our user nor use ours.
    const foreignGrant = await stack.request<{ error: { code: string } }>(
      'POST',
      '/api/v1/keys/grant-access',
      {
        apiKey: otherIssuer.apiKey,
        body: { userId: user.userId, keyId: user.keyId },
      },
    );
    expect(foreignGrant.status).toBe(403);
    expect(foreignGrant.json.error.code).toBe('GRANT_ERROR');
    const ourToken = await grantToken(stack, issuer.apiKey, user);
    const foreignDecrypt = await decrypt(envelope, ourToken, user.privateKey, otherIssuer.apiKey);
    expect(foreignDecrypt.status).toBe(403);
    expect(withoutRequestIdentity(foreignDecrypt.text)).toEqual(reference);
    // A key that is not the user's own is refused too.
    const mismatched = await stack.request('POST', '/api/v1/keys/grant-access', {
      apiKey: issuer.apiKey,
      body: { userId: user.userId, keyId: stranger.keyId },
    });
    expect(mismatched.status).toBe(403);
  });

  it('lets exactly one of many concurrent registrations of one hashedPan succeed', async () => {
    const hashedPan = newHashedPan();
    const pairs = await Promise.all(
      Array.from({ length: 8 }, () =>
        stack.request<Data<{ keyId: string; publicKey: string }>>(
          'POST',
          '/api/v1/onboarding/generate-keys',
          { apiKey: issuer.apiKey },
        ),
      ),
    );
    const replies = await Promise.all(
      pairs.map((pair) =>
        stack.request<{ error?: { code: string } }>('POST', '/api/v1/onboarding/register', {
          apiKey: issuer.apiKey,
          body: { hashedPan, publicKey: pair.json.data.publicKey, keyId: pair.json.data.keyId },
        }),
      ),
    );
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(
      replies.filter((reply) => reply.status === 409 && reply.json.error?.code === 'ALREADY_REGISTERED'),
    ).toHaveLength(7);
  });

  it('refuses unknown, foreign, mismatched and already-bound keys at registration', async () => {
    const register = (apiKey: string, body: unknown) =>
      stack.request<{ error: { code: string } }>('POST', '/api/v1/onboarding/register', { apiKey, body });
    const unknown = await register(issuer.apiKey, {
      hashedPan: newHashedPan(),
      publicKey: user.publicKey,
      keyId: randomUUID(),
    });
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'KEY_NOT_FOUND']);
    const fresh = await stack.request<Data<{ keyId: string; publicKey: string }>>(
      'POST',
      '/api/v1/onboarding/generate-keys',
      { apiKey: issuer.apiKey },
    );
    const foreign = await register(otherIssuer.apiKey, {
      hashedPan: newHashedPan(),
      keyId: fresh.json.data.keyId,
      publicKey: fresh.json.data.publicKey,
    });
    expect([foreign.status, foreign.json.error.code]).toEqual([404, 'KEY_NOT_FOUND']);
    const mismatched = await register(issuer.apiKey, {
      hashedPan: newHashedPan(),
      keyId: fresh.json.data.keyId,
      publicKey: user.publicKey,
    });
    expect([mismatched.status, mismatched.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    const bound = await register(issuer.apiKey, {
      hashedPan: newHashedPan(),
      keyId: user.keyId,
      publicKey: user.publicKey,
    });
    expect([bound.status, bound.json.error.code]).toEqual([409, 'ALREADY_REGISTERED']);
    const badPan = await register(issuer.apiKey, {
      hashedPan: 'ABC',
      keyId: fresh.json.data.keyId,
      publicKey: fresh.json.data.publicKey,
    });
    expect([badPan.status, badPan.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
  });

  it('grants exactly 5 of 20 concurrent token requests for one user, the rest 429 GRANT_ERROR with Retry-After', async () => {
    const busy = await onboardUser(stack, issuer.apiKey);
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        stack.request<{ error?: { code: string } }>('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          body: { userId: busy.userId, keyId: busy.keyId },
        }),
      ),
    );
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(5);
    const refused = replies.filter((reply) => reply.status === 429);
    expect(refused).toHaveLength(15);
    expect(
      refused.every(
        (reply) => reply.json.error?.code === 'GRANT_ERROR' && Number(reply.headers.get('retry-after')) >= 1,
      ),
    ).toBe(true);
    stack.clock.advance(181_000);
    expect(
      (
        await stack.request('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          body: { userId: busy.userId, keyId: busy.keyId },
        })
      ).status,
    ).toBe(200);
  });

  it('escrows a receipt for an unregistered recipient, unwraps it through the escrow key, and hands it over on a claim with its transaction', async () => {
    // The stack holds the key it was given: the run's one escrow key (test/support/escrow-key.ts).
    expect(stack.deps.escrow.keyId).toBe((await runEscrowKey()).keyId);
    const hashedPan = newHashedPan();
    secrets.push(hashedPan);
    const { receipt, envelope } = await encryptNested(sampleReceipt(), hashedPan);
    expect(envelope).toMatchObject({
      isEscrowed: true,
      escrowKeyId: stack.deps.escrow.keyId,
      keyId: stack.deps.escrow.keyId,
    });
    const escrowDays = (Date.parse(envelope.expiresAt) - Date.parse(envelope.createdAt)) / 86_400_000;
    expect(escrowDays).toBe(90);
    const opened = await openEnvelopeWith(envelope, (key) => stack.deps.escrow.unwrap(key));
    expect(JSON.parse(opened.toString('utf8'))).toEqual(receipt);
    // Nobody decrypts an escrowed envelope through the API.
    const token = await grantToken(stack, issuer.apiKey, user);
    expect((await decrypt(envelope, token)).status).toBe(403);
    // The cardholder registers (which releases nothing) and its issuer claims with the card transaction.
    const late = await onboardUser(stack, issuer.apiKey, hashedPan);
    const claim = await stack.request<Data<{ released: number }>>('POST', '/api/v1/receipts/claim', {
      apiKey: issuer.apiKey,
      body: {
        userId: late.userId,
        transactions: [
          {
            amount: receipt.summary.total,
            currency: receipt.summary.currency,
            transactionDate: receipt.transaction.datetime,
          },
        ],
      },
    });
    expect([claim.status, claim.json.data.released]).toEqual([200, 1]);
    const stored = await stack.deps.repos.receipts.get({
      merchantClientId: merchant.clientId,
      receiptId: receipt.receiptId,
    });
    expect(stored?.envelope).toMatchObject({
      isEscrowed: false,
      escrowKeyId: null,
      keyId: late.keyId,
      ciphertext: envelope.ciphertext,
      protected: envelope.protected,
    });
    const lateToken = await grantToken(stack, issuer.apiKey, late);
    const claimed = await decrypt(stored!.envelope, lateToken, late.privateKey);
    expect(claimed.status).toBe(200);
    expect(claimed.json.data).toEqual(receipt);
  });

  it('escrows a nested-form receipt addressed only by recipientIdentifier', async () => {
    const { envelope } = await encryptNested(sampleReceipt(), null);
    expect(envelope.isEscrowed).toBe(true);
    const stored = await stack.deps.repos.receipts.get({
      merchantClientId: merchant.clientId,
      receiptId: envelope.receiptId,
    });
    // Not stored in any form: neither the value nor a hash of it.
    expect(Object.keys(stored ?? {}).filter((name) => /identifier/i.test(name))).toEqual([]);
    expect(JSON.stringify(stored)).not.toContain('cardholder@example.com');
  });

  it('returns the first envelope for an identical retry and 409 for a different receipt under the same receiptId', async () => {
    const receipt = sampleReceipt();
    const first = await encryptNested(receipt);
    const again = await encryptNested(receipt);
    expect(again.envelope).toEqual(first.envelope);
    const clash = await stack.request<{ error: { code: string } }>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: {
        receipt: { ...receipt, notes: 'changed' },
        recipientIdentifier: { type: 'email', value: 'x@example.com' },
        recipientHashedPan: user.hashedPan,
      },
    });
    expect([clash.status, clash.json.error.code]).toEqual([409, 'CONFLICT']);
  });

  it('stores a transaction mapping once and lets only its merchant and its recipient issuer read it', async () => {
    const { envelope } = await encryptNested();
    const store = () =>
      stack.request<
        Data<{
          mappingId: string;
          transactionId: string;
          receiptId: string;
          paymentGateway: string;
          gatewayMetadata: unknown;
        }>
      >('POST', '/api/v1/transactions', {
        apiKey: merchant.apiKey,
        body: { envelope, paymentGateway: 'stripe', metadata: { terminal: 'T-9' } },
      });
    const first = await store();
    expect(first.status).toBe(200);
    expect(first.json.data).toMatchObject({
      transactionId: envelope.transactionId,
      receiptId: envelope.receiptId,
      paymentGateway: 'gateway_a',
      gatewayMetadata: { terminal: 'T-9' },
    });
    const second = await store();
    expect(second.json.data).toEqual(first.json.data);
    const path = `/api/v1/transactions/${envelope.transactionId}`;
    expect((await stack.request('GET', path, { apiKey: merchant.apiKey })).json).toEqual(first.json);
    expect((await stack.request('GET', path, { apiKey: issuer.apiKey })).status).toBe(200);
    const otherMerchant = await stack.apiKey(['merchant']);
    expect((await stack.request('GET', path, { apiKey: otherMerchant.apiKey })).status).toBe(404);
    expect((await stack.request('GET', path, { apiKey: otherIssuer.apiKey })).status).toBe(404);
    expect(
      (await stack.request('GET', `/api/v1/transactions/${randomUUID()}`, { apiKey: merchant.apiKey }))
        .status,
    ).toBe(404);
    // Another merchant cannot map our receipt: its merchantId is ours.
    const foreign = await stack.request('POST', '/api/v1/transactions', {
      apiKey: otherMerchant.apiKey,
      body: { envelope, paymentGateway: 'other' },
    });
    expect(foreign.status).toBe(403);
  });

  it('answers an envelope with empty identifiers 404 on transactions, never 500', async () => {
    const { envelope } = await encryptNested();
    const reply = await stack.request('POST', '/api/v1/transactions', {
      apiKey: merchant.apiKey,
      body: { envelope: { ...envelope, receiptId: '', transactionId: '' }, paymentGateway: 'other' },
    });
    expect(reply.status).toBe(404);
  });

  it('audits every operation without keys, token ids, full PAN hashes or receipt content', async () => {
    const records = await stack.deps.audit.forClient(issuer.clientId, 500);
    const actions = new Set(records.map((record) => record.action));
    for (const action of ['key.generate', 'user.register', 'access.grant', 'receipt.decrypt'])
      expect(actions).toContain(action);
    expect(
      records.some((record) => record.action === 'access.grant' && record.sourceIp === '127.0.0.1'),
    ).toBe(true);
    expect(
      records.some(
        (record) => record.action === 'receipt.decrypt' && record.outcome === 'failure' && record.reason,
      ),
    ).toBe(true);
    const text = JSON.stringify([...records, ...(await stack.deps.audit.forClient(merchant.clientId, 500))]);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
