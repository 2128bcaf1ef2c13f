import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { rateGroupOf, routes, type RouteDefinition } from '../../functions/routes.js';
import { tiers } from '../../lib/kernel/tiers.js';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type HttpReply, type TestStack } from '../support/stack.js';
import { INTERNAL_TEXT, replyProblem, type ErrorEnvelope, type SuccessEnvelope } from './support.js';

/**
 * The OWASP API Security Top 10 (2023) risks that apply to this service, each attacked over HTTP:
 * API1 object-level authorisation, API2 authentication, API3 property-level authorisation (mass
 * assignment), API4 resource consumption, API5 function-level authorisation, API8 misconfiguration.
 */

interface Client {
  apiKey: string;
  keyId: string;
  clientId: string;
}

type RequestOptions = { apiKey?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> };

const protectedRoutes = routes.filter((route) => route.apiKeyRequired);
const concretePath = (route: RouteDefinition): string =>
  route.path.replace('{gateway}', 'gateway_a').replace(/\{[A-Za-z]+\}/g, () => randomUUID());
const codeOf = (reply: HttpReply): string | undefined => (reply.json as Partial<ErrorEnvelope>).error?.code;

describe('OWASP API Top 10 attacks over HTTP', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let merchant: Client;
  let otherMerchant: Client;
  let issuer: Client;
  let otherIssuer: Client;
  let unrelatedIssuer: Client;
  let user: OnboardedUser;
  let foreigner: OnboardedUser;
  let outsider: OnboardedUser;
  let envelope: ReceiptEnvelope;
  const payments: { paymentId: string; gateway: string; transactionId: string }[] = [];
  /** Every reply this file received: API8 checks all of them for leaks. */
  const seen: { request: string; reply: HttpReply }[] = [];

  const call = async <T = Record<string, unknown>>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ) => {
    const reply = await stack.request<T>(method, path, options);
    seen.push({ request: `${method} ${path}`, reply: reply as HttpReply });
    return reply;
  };
  const decryptEnvelope = (apiKey: string, accessTokenId: string, privateKey: string, target = envelope) =>
    call('POST', '/api/v1/receipts/decrypt', {
      apiKey,
      body: { envelope: target, accessTokenId, privateKey },
    });
  const decryptPayment = (index: number, apiKey: string, accessTokenId: string, privateKey: string) => {
    const { paymentId, gateway } = payments[index]!;
    return call('POST', '/api/v1/payments/decrypt', {
      apiKey,
      body: { paymentId, gateway, accessTokenId, privateKey },
    });
  };
  /** The refusal body an unknown token gets: every decrypt refusal must be this one. */
  const uniformRefusal = async () =>
    withoutRequestIdentity((await decryptEnvelope(issuer.apiKey, randomUUID(), user.privateKey)).text);

  /** A request that the route would accept from a caller with the right role. */
  const validRequest = async (route: RouteDefinition): Promise<RequestOptions> => {
    switch (route.name) {
      case 'register': {
        const pair = await call<SuccessEnvelope<{ keyId: string; publicKey: string }>>(
          'POST',
          '/api/v1/onboarding/generate-keys',
          {
            apiKey: issuer.apiKey,
          },
        );
        return {
          body: {
            hashedPan: newHashedPan(),
            keyId: pair.json.data.keyId,
            publicKey: pair.json.data.publicKey,
          },
        };
      }
      case 'grant-access':
        return { body: { userId: user.userId, keyId: user.keyId } };
      case 'decrypt-receipt':
        return {
          body: {
            envelope,
            accessTokenId: await grantToken(stack, issuer.apiKey, user),
            privateKey: user.privateKey,
          },
        };
      case 'decrypt-payment':
        return {
          body: {
            paymentId: payments[0]!.paymentId,
            gateway: payments[0]!.gateway,
            accessTokenId: await grantToken(stack, issuer.apiKey, user),
            privateKey: user.privateKey,
          },
        };
      case 'encrypt-receipt':
        return { body: flattenedReceipt({ recipientHashedPan: user.hashedPan }) };
      case 'store-transaction':
        return { body: { envelope, paymentGateway: 'other' } };
      case 'create-payment':
        return { body: { ...flattenedReceipt(), amount: 1548 } };
      default:
        return {};
    }
  };

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack({
      tiers: {
        ...tiers,
        free: {
          ratePerSecond: 1,
          burst: 1,
          dailyQuota: 10,
          requestsPerMinute: { general: 3, keyGeneration: 3, payments: 3 },
        },
      },
    });
    merchant = await stack.apiKey(['merchant']);
    otherMerchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
    unrelatedIssuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
    foreigner = await onboardUser(stack, otherIssuer.apiKey);
    outsider = await onboardUser(stack, unrelatedIssuer.apiKey);
    const encrypted = await call<SuccessEnvelope<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: {
        receipt: sampleReceipt(),
        recipientIdentifier: { type: 'email', value: 'owasp@example.com' },
        recipientHashedPan: user.hashedPan,
      },
    });
    envelope = encrypted.json.data;
    expect(
      (
        await call('POST', '/api/v1/transactions', {
          apiKey: merchant.apiKey,
          body: { envelope, paymentGateway: 'other' },
        })
      ).status,
    ).toBe(200);
    for (const [gateway, extra] of [
      ['gateway_a', { amount: 1548 }],
      ['gateway_b', { cardNonce: 'cnon:card-nonce-ok' }],
    ] as const) {
      const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
      const reply = await call<SuccessEnvelope<{ paymentId: string }>>(
        'POST',
        `/api/v1/payments/${gateway}/create`,
        {
          apiKey: merchant.apiKey,
          body: { ...body, ...extra },
        },
      );
      expect(reply.status).toBe(200);
      payments.push({
        paymentId: reply.json.data.paymentId,
        gateway,
        transactionId: body.transactionId as string,
      });
    }
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  describe('API1 broken object-level authorisation', () => {
    it("refuses a grant for another client's user, even with a key of its own", async () => {
      for (const keyId of [user.keyId, foreigner.keyId]) {
        const reply = await call('POST', '/api/v1/keys/grant-access', {
          apiKey: otherIssuer.apiKey,
          body: { userId: user.userId, keyId },
        });
        expect([reply.status, codeOf(reply)]).toEqual([403, 'GRANT_ERROR']);
        expect(reply.text).not.toContain('tokenId');
      }
      // Indistinguishable from a grant for a user that does not exist: no probing for user ids.
      const unknown = await call('POST', '/api/v1/keys/grant-access', {
        apiKey: otherIssuer.apiKey,
        body: { userId: randomUUID(), keyId: user.keyId },
      });
      const foreign = await call('POST', '/api/v1/keys/grant-access', {
        apiKey: otherIssuer.apiKey,
        body: { userId: user.userId, keyId: user.keyId },
      });
      expect(withoutRequestIdentity(foreign.text)).toEqual(withoutRequestIdentity(unknown.text));
    });

    it("refuses to decrypt with another client's valid token, whoever presents it", async () => {
      const uniform = await uniformRefusal();
      const foreignToken = await grantToken(stack, otherIssuer.apiKey, foreigner);
      const ourToken = await grantToken(stack, issuer.apiKey, user);
      const attempts: [string, HttpReply][] = [
        [
          "our client with the other client's token and its user's key",
          await decryptEnvelope(issuer.apiKey, foreignToken, foreigner.privateKey),
        ],
        [
          "our client with the other client's token and our user's key",
          await decryptEnvelope(issuer.apiKey, foreignToken, user.privateKey),
        ],
        [
          "the other client with our token and our user's stolen key",
          await decryptEnvelope(otherIssuer.apiKey, ourToken, user.privateKey),
        ],
        [
          'the other client with our token, payment path',
          await decryptPayment(0, otherIssuer.apiKey, ourToken, user.privateKey),
        ],
        [
          "our client with the other client's token, payment path",
          await decryptPayment(1, issuer.apiKey, foreignToken, foreigner.privateKey),
        ],
      ];
      for (const [label, reply] of attempts) {
        expect({ label, status: reply.status, body: withoutRequestIdentity(reply.text) }).toEqual({
          label,
          status: 403,
          body: uniform,
        });
      }
      // The same token and key work for their owner: the refusals are about who asks.
      expect((await decryptEnvelope(issuer.apiKey, ourToken, user.privateKey)).status).toBe(200);
    });

    it("refuses to read another merchant's transaction, answering exactly as for one that does not exist", async () => {
      const missing = await call('GET', `/api/v1/transactions/${randomUUID()}`, {
        apiKey: otherMerchant.apiKey,
      });
      expect(missing.status).toBe(404);
      for (const transactionId of [
        envelope.transactionId,
        payments[0]!.transactionId,
        payments[1]!.transactionId,
      ]) {
        for (const client of [otherMerchant, unrelatedIssuer, otherIssuer]) {
          const reply = await call('GET', `/api/v1/transactions/${transactionId}`, { apiKey: client.apiKey });
          expect(reply.status).toBe(404);
          expect(withoutRequestIdentity(reply.text)).toEqual(withoutRequestIdentity(missing.text));
          expect(reply.text).not.toContain(transactionId);
        }
        expect(
          (await call('GET', `/api/v1/transactions/${transactionId}`, { apiKey: merchant.apiKey })).status,
        ).toBe(200);
        expect(
          (await call('GET', `/api/v1/transactions/${transactionId}`, { apiKey: issuer.apiKey })).status,
        ).toBe(200);
      }
    });

    it("refuses to register a user with another client's keyId and leaves the key unbound", async () => {
      const pair = await call<SuccessEnvelope<{ keyId: string; publicKey: string }>>(
        'POST',
        '/api/v1/onboarding/generate-keys',
        {
          apiKey: issuer.apiKey,
        },
      );
      const { keyId, publicKey } = pair.json.data;
      const stolen = await call('POST', '/api/v1/onboarding/register', {
        apiKey: otherIssuer.apiKey,
        body: { hashedPan: newHashedPan(), keyId, publicKey },
      });
      const unknown = await call('POST', '/api/v1/onboarding/register', {
        apiKey: otherIssuer.apiKey,
        body: { hashedPan: newHashedPan(), keyId: randomUUID(), publicKey },
      });
      expect([stolen.status, codeOf(stolen)]).toEqual([404, 'KEY_NOT_FOUND']);
      expect(withoutRequestIdentity(stolen.text)).toEqual(withoutRequestIdentity(unknown.text));
      expect((await stack.deps.repos.keyPairs.get(keyId))?.userId).toBeUndefined();
      const own = await call('POST', '/api/v1/onboarding/register', {
        apiKey: issuer.apiKey,
        body: { hashedPan: newHashedPan(), keyId, publicKey },
      });
      expect(own.status).toBe(200);
    });

    it("refuses payments/decrypt of another merchant's payment by an unrelated issuer, with its own or a stolen token", async () => {
      const uniform = await uniformRefusal();
      const outsiderToken = await grantToken(stack, unrelatedIssuer.apiKey, outsider);
      const stolenToken = await grantToken(stack, issuer.apiKey, user);
      for (const index of [0, 1]) {
        for (const [label, accessTokenId, privateKey] of [
          ['its own token and key', outsiderToken, outsider.privateKey],
          ["the recipient's stolen token and key", stolenToken, user.privateKey],
        ] as const) {
          const reply = await decryptPayment(index, unrelatedIssuer.apiKey, accessTokenId, privateKey);
          expect({ index, label, status: reply.status, body: withoutRequestIdentity(reply.text) }).toEqual({
            index,
            label,
            status: 403,
            body: uniform,
          });
        }
        expect((await decryptPayment(index, issuer.apiKey, stolenToken, user.privateKey)).status).toBe(200);
      }
    });

    it("refuses a merchant that maps, overwrites or charges against another merchant's receipt", async () => {
      const ours = { merchantClientId: merchant.clientId, receiptId: envelope.receiptId };
      const ourMapping = { merchantClientId: merchant.clientId, transactionId: envelope.transactionId };
      const before = await stack.deps.repos.receipts.get(ours);
      const mapped = await call('POST', '/api/v1/transactions', {
        apiKey: otherMerchant.apiKey,
        body: { envelope, paymentGateway: 'other' },
      });
      // The envelope names our merchantId, which is ours alone.
      expect([mapped.status, codeOf(mapped)]).toEqual([403, 'forbidden']);
      // The same ids under its own merchantId are the other merchant's own receipt: no clash, no oracle.
      const overwrite = await call('POST', '/api/v1/receipts/encrypt', {
        apiKey: otherMerchant.apiKey,
        body: flattenedReceipt({ receiptId: envelope.receiptId, merchantName: 'Impostor Ltd' }),
      });
      expect(overwrite.status).toBe(200);
      const charge = await call('POST', '/api/v1/payments/gateway_a/create', {
        apiKey: otherMerchant.apiKey,
        body: {
          ...flattenedReceipt({ receiptId: randomUUID(), transactionId: envelope.transactionId }),
          amount: 1548,
        },
      });
      expect(charge.status).toBe(200);
      expect(await stack.deps.repos.receipts.get(ours)).toEqual(before);
      expect((await stack.deps.repos.transactions.get(ourMapping))?.receiptId).toBe(envelope.receiptId);
    });
  });

  describe('API2 broken authentication', () => {
    const unauthorisedEverywhere = async (
      label: string,
      options: (route: RouteDefinition) => RequestOptions & { query?: string },
    ) => {
      for (const route of protectedRoutes) {
        const { query = '', ...request } = options(route);
        const reply = await call(route.method, `${concretePath(route)}${query}`, {
          ...request,
          ...(route.method === 'POST' ? { body: {} } : {}),
        });
        expect({
          label,
          route: route.name,
          status: reply.status,
          code: codeOf(reply),
          problem: replyProblem(reply),
        }).toEqual({
          label,
          route: route.name,
          status: 401,
          code: 'unauthorized',
          problem: undefined,
        });
      }
    };

    it.each([
      ['a missing key', () => ({})],
      ['an empty key', () => ({ apiKey: '', headers: { 'X-API-Key': '' } })],
      ['a garbage key', () => ({ apiKey: 'not-a-key' })],
      ['a truncated key', (key: string) => ({ apiKey: key.slice(0, -1) })],
      ['a key with one more character', (key: string) => ({ apiKey: `${key}A` })],
      ['an upper-cased key', (key: string) => ({ apiKey: key.toUpperCase() })],
      [
        'a key whose secret changed case',
        (key: string) => ({
          apiKey: `${key.slice(0, 36)}${[...key.slice(36)].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('')}`,
        }),
      ],
      [
        'a known key id with a wrong secret',
        (key: string) => ({ apiKey: `${key.slice(0, 36)}${'A'.repeat(43)}` }),
      ],
      ['an unknown key of the right shape', () => ({ apiKey: `rk_${'0'.repeat(32)}_${'A'.repeat(43)}` })],
      ['the key as a Bearer token', (key: string) => ({ headers: { Authorization: `Bearer ${key}` } })],
      [
        'the key in the query string',
        (key: string) => ({ query: `?api_key=${key}&X-API-Key=${key}&apiKey=${key}` }),
      ],
    ])('answers %s with 401 on every protected route', async (label, options) => {
      const fresh = await stack.apiKey(['merchant', 'issuer']);
      await unauthorisedEverywhere(label, () => options(fresh.apiKey));
      // The unaltered key works, so each 401 above is down to the alteration.
      expect(
        (await call('GET', `/api/v1/transactions/${randomUUID()}`, { apiKey: fresh.apiKey })).status,
      ).toBe(404);
    });

    it('stops honouring a revoked key once the key cache lifetime has passed', async () => {
      const revocable = await stack.apiKey(['merchant', 'issuer']);
      expect(
        (await call('POST', '/api/v1/onboarding/generate-keys', { apiKey: revocable.apiKey })).status,
      ).toBe(200);
      await stack.deps.repos.apiKeys.update(revocable.keyId, {
        status: 'revoked',
        revokedAt: stack.clock.now().toISOString(),
      });
      stack.clock.advance((stack.config.apiKeyCacheTtlSeconds + 1) * 1000);
      await unauthorisedEverywhere('a revoked key', () => ({ apiKey: revocable.apiKey }));
    });
  });

  describe('API3 broken object property-level authorisation (mass assignment)', () => {
    // Server-owned fields a caller might try to set. Every request body is closed: each of these is
    // refused by name (400), so nothing a caller chose is stored, returned or charged.
    const escalation = {
      clientId: randomUUID(),
      status: 'admin',
      role: 'admin',
      isAdmin: true,
      isEscrowed: false,
      escrowKeyId: null,
    };

    const refusesEach = (reply: HttpReply, fields: string[]) => {
      expect(reply.status).toBe(400);
      expect(codeOf(reply)).toBe('INVALID_REQUEST');
      const named = ((reply.json as ErrorEnvelope).error.details?.fields ?? []) as { field: string }[];
      expect(named.map((entry) => entry.field).sort()).toEqual([...fields].sort());
    };

    it('register refuses a chosen userId, clientId, status and registeredAt, and registers nobody', async () => {
      const pair = await call<SuccessEnvelope<{ keyId: string; publicKey: string }>>(
        'POST',
        '/api/v1/onboarding/generate-keys',
        { apiKey: issuer.apiKey },
      );
      const chosenUserId = randomUUID();
      const reply = await call('POST', '/api/v1/onboarding/register', {
        apiKey: issuer.apiKey,
        body: {
          hashedPan: newHashedPan(),
          keyId: pair.json.data.keyId,
          publicKey: pair.json.data.publicKey,
          ...escalation,
          userId: chosenUserId,
          registeredAt: '2000-01-01T00:00:00Z',
        },
      });
      refusesEach(reply, [...Object.keys(escalation), 'userId', 'registeredAt']);
      expect(await stack.deps.repos.users.getById(chosenUserId)).toBeNull();
    });

    it('grant-access refuses a chosen tokenId, expiry, purpose and source IP, and grants nothing', async () => {
      const fresh = await onboardUser(stack, issuer.apiKey);
      const chosenTokenId = randomUUID();
      const reply = await call('POST', '/api/v1/keys/grant-access', {
        apiKey: issuer.apiKey,
        body: {
          userId: fresh.userId,
          keyId: fresh.keyId,
          ...escalation,
          tokenId: chosenTokenId,
          expiresAt: '2999-01-01T00:00:00Z',
          purpose: 'admin',
          sourceIp: '203.0.113.66',
        },
      });
      refusesEach(reply, [...Object.keys(escalation), 'tokenId', 'expiresAt', 'purpose', 'sourceIp']);
      expect(await stack.deps.repos.accessTokens.find(chosenTokenId)).toBeNull();
    });

    it('encrypt refuses escrow flags, keys, owners and unknown receipt fields at any depth, and stores nothing', async () => {
      const receipt = { ...sampleReceipt(), adminNote: 'grant me' };
      const nested = await call('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body: {
          receipt: { ...receipt, merchant: { ...receipt.merchant, role: 'admin' } },
          recipientIdentifier: { type: 'email', value: 'nobody@example.com' },
          ...escalation,
          keyId: user.keyId,
          merchantClientId: otherMerchant.clientId,
        },
      });
      refusesEach(nested, [
        ...Object.keys(escalation),
        'keyId',
        'merchantClientId',
        'receipt.adminNote',
        'receipt.merchant.role',
      ]);
      const flattenedBody = flattenedReceipt();
      const flattened = await call('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body: { ...flattenedBody, ...escalation, keyId: user.keyId, userId: user.userId },
      });
      refusesEach(flattened, [...Object.keys(escalation), 'keyId', 'userId']);
      for (const receiptId of [receipt.receiptId, flattenedBody.receiptId]) {
        expect(
          await stack.deps.repos.receipts.get({ merchantClientId: merchant.clientId, receiptId }),
        ).toBeNull();
      }
    });

    it('store-transaction refuses a chosen mappingId, owner, paymentId and createdAt, and maps nothing', async () => {
      const fresh = await call<SuccessEnvelope<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body: flattenedReceipt(),
      });
      const reply = await call('POST', '/api/v1/transactions', {
        apiKey: merchant.apiKey,
        body: {
          envelope: { ...fresh.json.data, merchantClientId: otherMerchant.clientId },
          paymentGateway: 'other',
          ...escalation,
          mappingId: randomUUID(),
          merchantClientId: otherMerchant.clientId,
          paymentId: 'pi_chosen',
          createdAt: '2000-01-01T00:00:00Z',
        },
      });
      refusesEach(reply, [
        'envelope.merchantClientId',
        ...Object.keys(escalation),
        'mappingId',
        'merchantClientId',
        'paymentId',
        'createdAt',
      ]);
      expect(
        await stack.deps.repos.transactions.get({
          merchantClientId: merchant.clientId,
          transactionId: fresh.json.data.transactionId,
        }),
      ).toBeNull();
    });

    it('create-payment refuses a chosen paymentId, owner and escrow flags before it charges', async () => {
      const body = flattenedReceipt({ recipientHashedPan: newHashedPan() });
      const before = stack.sandbox!.stats.paymentsCreated.gateway_a;
      const reply = await call('POST', '/api/v1/payments/gateway_a/create', {
        apiKey: merchant.apiKey,
        body: {
          ...body,
          amount: 1548,
          ...escalation,
          paymentId: 'pi_chosen',
          receiptMetadata: { isEscrowed: false },
          merchantClientId: otherMerchant.clientId,
        },
      });
      refusesEach(reply, [...Object.keys(escalation), 'paymentId', 'receiptMetadata', 'merchantClientId']);
      expect(stack.sandbox!.stats.paymentsCreated.gateway_a).toBe(before);
      expect(
        await stack.deps.repos.receipts.get({
          merchantClientId: merchant.clientId,
          receiptId: body.receiptId,
        }),
      ).toBeNull();
    });
  });

  describe('API4 unrestricted resource consumption', () => {
    it('refuses a body over 128 KiB with 413 on every POST route, and accepts one of exactly 128 KiB for validation', async () => {
      for (const route of protectedRoutes.filter((candidate) => candidate.method === 'POST')) {
        const apiKey = route.roles.includes('merchant') ? merchant.apiKey : issuer.apiKey;
        const reply = await call('POST', concretePath(route), {
          apiKey,
          body: { pad: 'x'.repeat(128 * 1024) },
        });
        expect({ route: route.name, status: reply.status, code: codeOf(reply) }).toEqual({
          route: route.name,
          status: 413,
          code: 'payload_too_large',
        });
      }
      const exactly = (size: number) => {
        const skeleton = JSON.stringify({ userId: '' });
        return JSON.stringify({ userId: 'x'.repeat(size - skeleton.length) });
      };
      const headers = { 'Content-Type': 'application/json' };
      const atLimit = await call('POST', '/api/v1/keys/grant-access', {
        apiKey: issuer.apiKey,
        rawBody: exactly(128 * 1024),
        headers,
      });
      expect([atLimit.status, codeOf(atLimit)]).toEqual([400, 'INVALID_REQUEST']);
      const overLimit = await call('POST', '/api/v1/keys/grant-access', {
        apiKey: issuer.apiKey,
        rawBody: exactly(128 * 1024 + 1),
        headers,
      });
      expect([overLimit.status, codeOf(overLimit)]).toEqual([413, 'payload_too_large']);
    });

    it('refuses more than 500 items with 400 naming items, on both encrypt forms and payment creation', async () => {
      const items = (count: number) =>
        Array.from({ length: count }, () => ({
          lineItemId: randomUUID(),
          name: 'x',
          quantity: 1,
          unitPrice: 1,
          totalPrice: 1,
        }));
      const flattened = (count: number) =>
        flattenedReceipt({ items: items(count), subtotal: count, taxAmount: 0, totalAmount: count });
      const receipt = sampleReceipt();
      const requests: [string, string, unknown, string][] = [
        ['flattened encrypt', '/api/v1/receipts/encrypt', flattened(501), 'items'],
        [
          'payment creation',
          '/api/v1/payments/gateway_a/create',
          { ...flattened(501), amount: 501 },
          'items',
        ],
        [
          'nested encrypt',
          '/api/v1/receipts/encrypt',
          {
            receipt: { ...receipt, items: items(501), summary: { ...receipt.summary, subtotal: 501 } },
            recipientIdentifier: { type: 'email', value: 'many@example.com' },
          },
          'receipt.items',
        ],
      ];
      for (const [label, path, body, field] of requests) {
        const reply = await call<ErrorEnvelope>('POST', path, { apiKey: merchant.apiKey, body });
        expect({ label, status: reply.status }).toEqual({ label, status: 400 });
        expect(
          (reply.json.error.details?.fields as { field: string }[]).map((entry) => entry.field),
        ).toContain(field);
      }
      // 500 is the limit, not 499: the boundary itself is accepted.
      expect(
        (await call('POST', '/api/v1/receipts/encrypt', { apiKey: merchant.apiKey, body: flattened(500) }))
          .status,
      ).toBe(200);
    });

    it('refuses huge strings with 400 naming the field', async () => {
      const receipt = sampleReceipt();
      const token = await grantToken(stack, issuer.apiKey, user);
      const cases: [string, string, string, unknown, string][] = [
        [
          'merchantName',
          merchant.apiKey,
          '/api/v1/receipts/encrypt',
          flattenedReceipt({ merchantName: 'm'.repeat(257) }),
          'merchantName',
        ],
        [
          'item name',
          merchant.apiKey,
          '/api/v1/receipts/encrypt',
          flattenedReceipt({
            items: [
              {
                lineItemId: randomUUID(),
                name: 'n'.repeat(100_000),
                quantity: 1,
                unitPrice: 1425,
                totalPrice: 1425,
              },
            ],
          }),
          'items.0.name',
        ],
        [
          'receipt notes',
          merchant.apiKey,
          '/api/v1/receipts/encrypt',
          {
            receipt: { ...receipt, notes: 'n'.repeat(4097) },
            recipientIdentifier: { type: 'email', value: 'a@example.com' },
          },
          'receipt.notes',
        ],
        [
          'cardNonce',
          merchant.apiKey,
          '/api/v1/payments/gateway_b/create',
          { ...flattenedReceipt(), cardNonce: 'c'.repeat(193) },
          'cardNonce',
        ],
        [
          'transaction metadata',
          merchant.apiKey,
          '/api/v1/transactions',
          { envelope, paymentGateway: 'other', metadata: { blob: 'b'.repeat(9_000) } },
          'metadata',
        ],
        [
          'publicKey',
          issuer.apiKey,
          '/api/v1/onboarding/register',
          { hashedPan: newHashedPan(), keyId: randomUUID(), publicKey: 'A'.repeat(4097) },
          'publicKey',
        ],
        [
          'privateKey',
          issuer.apiKey,
          '/api/v1/receipts/decrypt',
          { envelope, accessTokenId: token, privateKey: 'A'.repeat(16_385) },
          'privateKey',
        ],
        [
          'paymentId',
          issuer.apiKey,
          '/api/v1/payments/decrypt',
          { ...payments[0]!, paymentId: 'p'.repeat(256), accessTokenId: token, privateKey: user.privateKey },
          'paymentId',
        ],
        [
          'iv',
          issuer.apiKey,
          '/api/v1/receipts/decrypt',
          {
            envelope: { ...envelope, iv: 'A'.repeat(65) },
            accessTokenId: token,
            privateKey: user.privateKey,
          },
          'envelope.iv',
        ],
      ];
      for (const [label, apiKey, path, body, field] of cases) {
        const reply = await call<ErrorEnvelope>('POST', path, { apiKey, body });
        expect({ label, status: reply.status, code: codeOf(reply) }).toEqual({
          label,
          status: 400,
          code: 'INVALID_REQUEST',
        });
        expect(
          (reply.json.error.details?.fields as { field: string }[]).map((entry) => entry.field),
        ).toContain(field);
      }
    });

    it('answers past the per-key rate limit with 429 and the rate-limit headers, without touching other keys', async () => {
      const limited = await stack.apiKey(['issuer'], 'free');
      stack.clock.set(Math.ceil(stack.clock.now().getTime() / 60_000) * 60_000 + 1_000);
      const issuerRoutes = protectedRoutes.filter((candidate) => candidate.roles.includes('issuer'));
      // Each endpoint group has its own budget (3 a minute each here): spend every one the key reaches.
      for (const group of new Set(issuerRoutes.map(rateGroupOf))) {
        const route = issuerRoutes.find((candidate) => rateGroupOf(candidate) === group) as RouteDefinition;
        const remaining: (string | null)[] = [];
        for (let index = 0; index < 3; index += 1) {
          const reply = await call(route.method, concretePath(route), {
            apiKey: limited.apiKey,
            ...(route.method === 'POST' ? { body: {} } : {}),
          });
          expect({ route: route.name, status: reply.status }).not.toEqual({ route: route.name, status: 429 });
          remaining.push(reply.headers.get('x-ratelimit-remaining'));
        }
        expect({ group, remaining }).toEqual({ group, remaining: ['2', '1', '0'] });
      }
      for (const route of issuerRoutes) {
        const reply = await call(route.method, concretePath(route), {
          apiKey: limited.apiKey,
          ...(route.method === 'POST' ? { body: {} } : {}),
        });
        expect({ route: route.name, status: reply.status, code: codeOf(reply) }).toEqual({
          route: route.name,
          status: 429,
          code: 'rate_limit_exceeded',
        });
        expect(reply.headers.get('x-ratelimit-limit')).toBe('3');
        expect(reply.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(Number(reply.headers.get('x-ratelimit-reset'))).toBeGreaterThan(
          stack.clock.now().getTime() / 1000,
        );
        expect(Number(reply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      // Another key of the same tier is not starved by this one.
      expect(
        (
          await call('POST', '/api/v1/onboarding/generate-keys', {
            apiKey: (await stack.apiKey(['issuer'], 'free')).apiKey,
          })
        ).status,
      ).toBe(200);
      stack.clock.advance(60_000);
      expect(
        (await call('POST', '/api/v1/onboarding/generate-keys', { apiKey: limited.apiKey })).status,
      ).toBe(200);
    });

    it('refuses a sixth live token for one user with 429 GRANT_ERROR and Retry-After', async () => {
      const busy = await onboardUser(stack, issuer.apiKey);
      for (let index = 0; index < 5; index += 1) await grantToken(stack, issuer.apiKey, busy);
      const sixth = await call('POST', '/api/v1/keys/grant-access', {
        apiKey: issuer.apiKey,
        body: { userId: busy.userId, keyId: busy.keyId },
      });
      expect([sixth.status, codeOf(sixth)]).toEqual([429, 'GRANT_ERROR']);
      expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    });
  });

  describe('API5 broken function-level authorisation', () => {
    it.each([
      ['a merchant', 'issuer', 'merchant'],
      ['an issuer', 'merchant', 'issuer'],
    ] as const)(
      'refuses %s key on every %s-only route with 403, even with a valid body',
      async (_label, owner, caller) => {
        const apiKey = caller === 'merchant' ? merchant.apiKey : issuer.apiKey;
        const targets = protectedRoutes.filter(
          (route) => route.roles.includes(owner) && !route.roles.includes(caller),
        );
        expect(targets.length).toBeGreaterThan(0);
        for (const route of targets) {
          const request = await validRequest(route);
          const reply = await call(route.method, concretePath(route), { ...request, apiKey });
          expect({ route: route.name, status: reply.status, code: codeOf(reply) }).toEqual({
            route: route.name,
            status: 403,
            code: 'forbidden',
          });
          expect(reply.text).not.toMatch(/privateKey|tokenId|paymentId|ciphertext/);
        }
      },
    );

    it('refuses a payment creation by an issuer before anything is encrypted or charged', async () => {
      const body = { ...flattenedReceipt(), amount: 1548 };
      const reply = await call('POST', '/api/v1/payments/gateway_a/create', { apiKey: issuer.apiKey, body });
      expect(reply.status).toBe(403);
      const owner = { merchantClientId: issuer.clientId };
      expect(
        await stack.deps.repos.receipts.get({ ...owner, receiptId: body.receiptId as string }),
      ).toBeNull();
      expect(
        await stack.deps.repos.transactions.get({ ...owner, transactionId: body.transactionId as string }),
      ).toBeNull();
    });

    it('exposes no other methods or hidden routes', async () => {
      // A path may carry several routes (POST and DELETE); every other method is 405 naming them.
      const methodsByPath = new Map<string, string[]>();
      for (const route of routes)
        methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method]);
      for (const route of routes) {
        const declared = methodsByPath.get(route.path) ?? [];
        for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !declared.includes(m))) {
          const reply = await call(method, concretePath(route), { apiKey: issuer.apiKey });
          expect({ route: route.name, method, status: reply.status }).toEqual({
            route: route.name,
            method,
            status: 405,
          });
          expect(reply.headers.get('allow')?.split(', ').sort()).toEqual([...declared].sort());
        }
      }
      for (const path of [
        '/api/v1/admin',
        '/api/v1/admin/keys',
        '/api/v1/users',
        '/api/v2/health',
        '/api/v1/transactions',
        '/api/v1/debug',
      ]) {
        const reply = await call('GET', path, { apiKey: issuer.apiKey });
        expect({ path, status: reply.status === 404 || reply.status === 405 }).toEqual({
          path,
          status: true,
        });
      }
    });
  });

  describe('API8 security misconfiguration', () => {
    it('puts no stack trace or internal error text in any error body', async () => {
      const json = { 'Content-Type': 'application/json' };
      const provoked = [
        await call('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          rawBody: '{"userId": ',
          headers: json,
        }),
        await call('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          rawBody: '{"__proto__": {"x": 1}}',
          headers: json,
        }),
        await call('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          rawBody: 'userId=1',
          headers: { 'Content-Type': 'text/plain' },
        }),
        await call('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          body: { userId: 1, keyId: [] },
        }),
        await call('POST', '/api/v1/receipts/decrypt', {
          apiKey: issuer.apiKey,
          body: { envelope: { ...envelope, protected: '!!' }, accessTokenId: randomUUID(), privateKey: 'x' },
        }),
        await call('POST', '/api/v1/payments/decrypt', {
          apiKey: issuer.apiKey,
          body: { paymentId: 'pi_nope', gateway: 'gateway_a', accessTokenId: randomUUID(), privateKey: 'x' },
        }),
        await call('GET', '/api/v1/transactions/not-a-uuid', { apiKey: merchant.apiKey }),
        await call('GET', '/api/v1/nowhere', { apiKey: merchant.apiKey }),
        await call('DELETE', '/api/v1/health'),
        await call('POST', '/api/v1/onboarding/register', {
          apiKey: issuer.apiKey,
          body: { hashedPan: newHashedPan(), keyId: randomUUID(), publicKey: 'AAAA' },
        }),
      ];
      expect(provoked.every((reply) => reply.status >= 400 && reply.status < 500)).toBe(true);
      const errors = seen.filter(({ reply }) => reply.status >= 400);
      expect(errors.length).toBeGreaterThan(50);
      for (const { request, reply } of errors) {
        expect({ request, problem: replyProblem(reply) }).toEqual({ request, problem: undefined });
        for (const pattern of INTERNAL_TEXT)
          expect({ request, leaks: pattern.test(reply.text) }).toEqual({ request, leaks: false });
      }
    });

    it('sends the security headers on every response, successes and errors alike', () => {
      expect(seen.some(({ reply }) => reply.status === 200)).toBe(true);
      for (const { request, reply } of seen) {
        const headers = {
          request,
          nosniff: reply.headers.get('x-content-type-options'),
          frame: reply.headers.get('x-frame-options'),
          hsts: /max-age=\d+/.test(reply.headers.get('strict-transport-security') ?? ''),
          csp: /default-src 'none'/.test(reply.headers.get('content-security-policy') ?? ''),
          referrer: reply.headers.get('referrer-policy'),
          poweredBy: reply.headers.get('x-powered-by'),
          corsWildcard: reply.headers.get('access-control-allow-origin') === '*',
          cache: reply.headers.get('cache-control'),
          requestId: Boolean(reply.headers.get('x-request-id')),
        };
        expect(headers).toEqual({
          request,
          nosniff: 'nosniff',
          frame: 'DENY',
          hsts: true,
          csp: true,
          referrer: 'no-referrer',
          poweredBy: null,
          corsWildcard: false,
          cache: 'no-store',
          requestId: true,
        });
      }
    });

    it('sends Cache-Control: no-store on grant-access and both decrypts, granted or refused', async () => {
      // Let the tokens earlier tests granted expire: the user may hold at most five live ones.
      stack.clock.advance(181_000);
      const token = await grantToken(stack, issuer.apiKey, user);
      const replies = [
        await call('POST', '/api/v1/keys/grant-access', {
          apiKey: issuer.apiKey,
          body: { userId: user.userId, keyId: user.keyId },
        }),
        await call('POST', '/api/v1/keys/grant-access', {
          apiKey: otherIssuer.apiKey,
          body: { userId: user.userId, keyId: user.keyId },
        }),
        await decryptEnvelope(issuer.apiKey, token, user.privateKey),
        await decryptEnvelope(issuer.apiKey, randomUUID(), user.privateKey),
        await decryptPayment(0, issuer.apiKey, token, user.privateKey),
        await decryptPayment(1, issuer.apiKey, randomUUID(), user.privateKey),
      ];
      expect(replies.map((reply) => reply.status)).toEqual([200, 403, 200, 403, 200, 403]);
      for (const reply of replies) expect(reply.headers.get('cache-control')).toBe('no-store');
    });
  });
});
