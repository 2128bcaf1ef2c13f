import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ed25519 } from '@noble/curves/ed25519.js';
import { exportJWK, generateKeyPair } from 'jose';
import {
  canonicalJson,
  generateDeviceKey,
  generateSigningKey,
  openEnvelope,
  signingKeyId,
  signKeyProof,
  signedRefundReceiptId,
  signReceipt,
  toDigitalReceipt,
  toRefundReceipt,
  verifyReceiptSignature,
  type DeviceKey,
  type DigitalReceipt,
  type FlattenedReceipt,
  type SigningAlgorithm,
  type SigningKey,
  type SigningPublicJwk,
} from '@receipt-service/sdk';
import {
  flattenedReceipt,
  flattenedReceipt12,
  gatewayFields,
  newHashedPan,
  sampleReceipt,
} from '../support/fixtures.js';
import { fetchReceipt, sandboxStripe, statusBecomes, type Kind } from '../support/lifecycle.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { runMerchantCommand } from '../../scripts/admin-merchants.js';
import { MerchantUsageError } from '../../scripts/admin/usage.js';
import {
  encryptBody as readmeEncryptBody,
  paymentBody as readmePaymentBody,
} from '../sdk/typecheck/readme-calls.js';

/**
 * Merchant-signed receipts over HTTP (issue 24): signing keys registered, listed, revoked and read;
 * a Receipt-Signature on payments/{gateway}/create (both gateways) and receipts/encrypt (both forms)
 * checked before anything is charged or stored and sealed inside the receipt, where the SDK verifies
 * it with the key GET /merchant-keys/{kid} gives; every way a signature can be wrong refused as 400
 * invalid_signature with nothing charged; a merchant that requires signatures; and the SDK's
 * toDigitalReceipt giving the very receipt the service seals.
 */

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: {
    code: string;
    message: string;
    details?: { reason?: string; kid?: string; fields?: { field: string; message: string }[] };
  };
}
interface SigningKeyResource {
  kid: string;
  alg: SigningAlgorithm;
  publicKey: SigningPublicJwk;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
}

const kinds: Kind[] = ['gateway_a', 'gateway_b'];

let stack: TestStack;
let merchant: string;
let otherMerchant: string;
let issuer: string;
let device: DeviceKey;
let hashedPan: string;
/** The merchant's till key, and another merchant's (a client holds at most 20 active keys). */
let till: SigningKey;
let otherTill: SigningKey;

beforeAll(async () => {
  stack = await startTestStack();
  merchant = (await stack.apiKey(['merchant'])).apiKey;
  otherMerchant = (await stack.apiKey(['merchant'])).apiKey;
  issuer = (await stack.apiKey(['issuer'])).apiKey;
  // The cardholder's device: its key opens the receipts the merchant signs for it.
  device = await generateDeviceKey();
  const imported = await stack.request<Data<{ keyId: string; publicKey: string }>>(
    'POST',
    '/api/v1/onboarding/keys',
    {
      apiKey: issuer,
      body: { publicKey: device.publicKey },
    },
  );
  hashedPan = newHashedPan();
  const registered = await stack.request('POST', '/api/v1/onboarding/register', {
    apiKey: issuer,
    body: { hashedPan, publicKey: imported.json.data.publicKey, keyId: imported.json.data.keyId },
  });
  expect(registered.status).toBe(200);
  till = await registeredKey();
  otherTill = await registeredKey(otherMerchant);
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

beforeEach(() => stack.sandbox!.reset());

/** Every key the test made, by kid: register() proves possession with the one it registers. */
const madeKeys = new Map<string, SigningKey>();
/** Each API key's registered, unrevoked keys: a further change is proven by the first of them. */
const activeKeys = new Map<string, SigningKey[]>();

async function newSigningKey(options: { algorithm?: SigningAlgorithm } = {}): Promise<SigningKey> {
  const key = await generateSigningKey(options);
  madeKeys.set(key.kid, key);
  return key;
}

/** A fresh challenge for the API key's client, and that client's id. */
async function challenge(apiKey: string): Promise<{ nonce: string; clientId: string }> {
  const reply = await stack.request<Data<{ nonce: string; clientId: string }>>(
    'POST',
    '/api/v1/merchants/signing-keys/challenges',
    { apiKey },
  );
  expect(reply.status).toBe(201);
  return reply.json.data;
}

/** The Key-Change-Proof the API key's client makes with its first active key, if it has one. */
async function keyChangeProof(
  apiKey: string,
  action: 'add-key' | 'revoke-key' | 'signing-policy',
  target: string,
): Promise<Record<string, string>> {
  const anchor = activeKeys.get(apiKey)?.[0];
  if (!anchor) return {};
  const { nonce, clientId } = await challenge(apiKey);
  return {
    'Key-Change-Proof': await signKeyProof(
      { action, clientId, target, nonce },
      anchor.privateKey,
      anchor.kid,
    ),
  };
}

/** Registers as a till does: proof of possession by the key, and a Key-Change-Proof once there is a key. */
async function register(apiKey: string, publicKey: unknown) {
  const kid = (publicKey as { kty?: string }).kty ? safeKid(publicKey) : undefined;
  const key = kid ? madeKeys.get(kid) : undefined;
  const body: Record<string, unknown> = { publicKey };
  if (key) {
    const { nonce, clientId } = await challenge(apiKey);
    body.proof = await signKeyProof(
      { action: 'register', clientId, kid: key.kid, nonce },
      key.privateKey,
      key.kid,
    );
  }
  const headers = key ? await keyChangeProof(apiKey, 'add-key', key.kid) : {};
  const reply = await stack.request<Data<SigningKeyResource> & ErrorBody>(
    'POST',
    '/api/v1/merchants/signing-keys',
    {
      apiKey,
      body,
      headers,
    },
  );
  if (reply.status === 201 && key && !activeKeys.get(apiKey)?.some((held) => held.kid === key.kid)) {
    activeKeys.set(apiKey, [...(activeKeys.get(apiKey) ?? []), key]);
  }
  return reply;
}

function safeKid(publicKey: unknown): string | undefined {
  try {
    return signingKeyId(publicKey as SigningPublicJwk);
  } catch {
    return undefined;
  }
}

/** Revokes with a Key-Change-Proof by the client's first active key (which may be the one revoked). */
async function revoke(apiKey: string, kid: string) {
  const reply = await stack.request<Data<SigningKeyResource> & ErrorBody>(
    'DELETE',
    `/api/v1/merchants/signing-keys/${kid}`,
    { apiKey, headers: await keyChangeProof(apiKey, 'revoke-key', kid) },
  );
  if (reply.status === 200) {
    activeKeys.set(
      apiKey,
      (activeKeys.get(apiKey) ?? []).filter((held) => held.kid !== kid),
    );
  }
  return reply;
}

/** A key made by the till with the SDK and registered by its merchant client. */
async function registeredKey(apiKey = merchant, algorithm: SigningAlgorithm = 'EdDSA'): Promise<SigningKey> {
  const key = await newSigningKey({ algorithm });
  const reply = await register(apiKey, key.publicJwk);
  expect(reply.status).toBe(201);
  expect(reply.json.data.kid).toBe(key.kid);
  return key;
}

const signedHeader = (jws: string) => ({ 'Receipt-Signature': jws });

/** What a till sends for flattened fields: its signature over the receipt they map to. */
const signFields = (body: Record<string, unknown>, key: SigningKey) =>
  signReceipt(toDigitalReceipt(body as FlattenedReceipt), key.privateKey, key.kid);

/** The flattened fields of a receipt for the registered card, timed (a signed receipt says its own time). */
const receiptFields = (overrides: Record<string, unknown> = {}) =>
  flattenedReceipt({ recipientHashedPan: hashedPan, transactionDate: '2026-11-21T09:15:00Z', ...overrides });

const createPayment = (
  kind: Kind,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  apiKey = merchant,
) =>
  stack.request<Data<{ paymentId: string; receiptMetadata: { receiptId: string } }> & ErrorBody>(
    'POST',
    `/api/v1/payments/${kind}/create`,
    { apiKey, body: { ...gatewayFields(kind, body as never), ...body }, headers },
  );

const encrypt = (body: unknown, headers: Record<string, string> = {}, apiKey = merchant) =>
  stack.request<Data<{ receiptId: string }> & ErrorBody>('POST', '/api/v1/receipts/encrypt', {
    apiKey,
    body,
    headers,
  });

/** The receipt as the cardholder's device opens it. */
const opened = async (receiptId: string): Promise<DigitalReceipt> =>
  openEnvelope<DigitalReceipt>((await fetchReceipt(stack, issuer, receiptId)).envelope, device.privateKey);

/** What the device checks a signature with: the key the service publishes under the receipt's kid. */
async function publishedKey(kid: string, apiKey = issuer): Promise<SigningKeyResource> {
  const reply = await stack.request<Data<SigningKeyResource>>('GET', `/api/v1/merchant-keys/${kid}`, {
    apiKey,
  });
  expect(reply.status).toBe(200);
  return reply.json.data;
}

/** Nothing of the request is left: no payment at the gateway, no receipt, no merchantId claimed. */
async function nothingLeft(body: { receiptId: string; merchantId: string }) {
  expect(stack.sandbox!.stats.paymentsCreated).toEqual({ gateway_a: 0, gateway_b: 0 });
  expect(stack.sandbox!.stats.ordersCreated).toBe(0);
  expect(Object.values(stack.sandbox!.stats.requests).every((count) => count === 0)).toBe(true);
  expect((await stack.request('GET', `/api/v1/receipts/${body.receiptId}`, { apiKey: issuer })).status).toBe(
    404,
  );
  expect(await stack.deps.repos.merchants.ownerOf(body.merchantId)).toBeNull();
}

const header = (members: Record<string, unknown>) =>
  Buffer.from(JSON.stringify(members)).toString('base64url');

describe('merchant signing keys', () => {
  it.each<SigningAlgorithm>(['EdDSA', 'ES256'])(
    'registers a %s key, named by its thumbprint, readable by issuers and merchants, listed for its owner only',
    async (algorithm) => {
      const key = await newSigningKey({ algorithm });
      const registered = await register(merchant, key.publicJwk);
      expect(registered.status).toBe(201);
      expect(registered.json.data).toEqual({
        kid: key.kid,
        alg: algorithm,
        publicKey: key.publicJwk,
        status: 'active',
        createdAt: expect.any(String),
        revokedAt: null,
      });
      // Registered again by its owner: the same key, not a second one.
      expect((await register(merchant, key.publicJwk)).json.data).toEqual(registered.json.data);
      expect(await publishedKey(key.kid)).toEqual(registered.json.data);
      expect(await publishedKey(key.kid, otherMerchant)).toEqual(registered.json.data);
      const mine = await stack.request<
        Data<{ signingKeys: SigningKeyResource[]; requireSignatures: boolean }>
      >('GET', '/api/v1/merchants/signing-keys', { apiKey: merchant });
      expect(mine.json.data.signingKeys.map((listed) => listed.kid)).toContain(key.kid);
      expect(mine.json.data.requireSignatures).toBe(false);
      const theirs = await stack.request<Data<{ signingKeys: SigningKeyResource[] }>>(
        'GET',
        '/api/v1/merchants/signing-keys',
        { apiKey: otherMerchant },
      );
      expect(theirs.json.data.signingKeys.map((listed) => listed.kid)).not.toContain(key.kid);
      // A key belongs to the merchant client that registered it.
      const taken = await register(otherMerchant, key.publicJwk);
      expect([taken.status, taken.json.error.code]).toEqual([409, 'CONFLICT']);
      expect(taken.json.error.message).toContain('Another merchant client proved it holds this private key');
    },
  );

  it('refuses private members, other key types and curves, points off the curve and weak keys, naming each', async () => {
    const ed = await generateKeyPair('Ed25519', { extractable: true });
    const privateEd = await exportJWK(ed.privateKey);
    const rsa = await exportJWK((await generateKeyPair('RS256', { extractable: true })).publicKey);
    const p384 = await exportJWK((await generateKeyPair('ES384')).publicKey);
    const x25519 = await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'X25519' })).publicKey);
    const ec = (await newSigningKey({ algorithm: 'ES256' })).publicJwk as {
      kty: 'EC';
      x: string;
      y: string;
    };
    const good = (await newSigningKey()).publicJwk as { x: string };
    const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
    // The identity (y = 1) and a point of order 8 from the torsion subgroup; then a key of mixed order.
    const identity = b64(ed25519.Point.ZERO.toBytes());
    const torsion = ed25519.Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa');
    const mixed = b64(ed25519.Point.BASE.multiply(7n).add(torsion).toBytes());
    const offCurveY = Buffer.from(ec.y, 'base64url');
    offCurveY[31] = offCurveY[31]! ^ 1;
    const cases: [string, unknown, string, RegExp][] = [
      ['a private Ed25519 JWK', privateEd, 'publicKey.d', /private key material/],
      ['an RSA key', rsa, 'publicKey.kty', /kty RSA is not accepted/],
      ['P-384', p384, 'publicKey.crv', /crv P-384 is not accepted/],
      ['X25519', x25519, 'publicKey.crv', /crv X25519 is not accepted/],
      ['a P-256 point off the curve', { ...ec, y: b64(offCurveY) }, 'publicKey.x', /not a point on P-256/],
      [
        'the Ed25519 identity',
        { kty: 'OKP', crv: 'Ed25519', x: identity },
        'publicKey.x',
        /small-order point.*weak key/,
      ],
      [
        'a small-order Ed25519 point',
        { kty: 'OKP', crv: 'Ed25519', x: b64(torsion.toBytes()) },
        'publicKey.x',
        /small-order/,
      ],
      ['a mixed-order Ed25519 point', { kty: 'OKP', crv: 'Ed25519', x: mixed }, 'publicKey.x', /mixed-order/],
      ['a short x', { kty: 'OKP', crv: 'Ed25519', x: good.x.slice(0, 40) }, 'publicKey.x', /32 bytes/],
      [
        'a kid that is not the thumbprint',
        { ...good, kty: 'OKP', crv: 'Ed25519', kid: 'mine' },
        'publicKey.kid',
        /thumbprint/,
      ],
      [
        'an unknown member',
        { kty: 'OKP', crv: 'Ed25519', x: good.x, colour: 'red' },
        'publicKey.colour',
        /not a member/,
      ],
      [
        'a verify key used for encryption',
        { kty: 'OKP', crv: 'Ed25519', x: good.x, use: 'enc' },
        'publicKey.use',
        /sig/,
      ],
    ];
    for (const [what, publicKey, field, message] of cases) {
      const reply = await register(merchant, publicKey);
      const problem = reply.json.error?.details?.fields?.find((candidate) => candidate.field === field);
      expect({ what, status: reply.status, code: reply.json.error?.code, field: problem?.field }).toEqual({
        what,
        status: 400,
        code: 'INVALID_REQUEST',
        field,
      });
      expect(problem!.message).toMatch(message);
      // A private key is never echoed back or kept.
      expect(reply.text).not.toContain((privateEd as { d: string }).d);
    }
  });

  it('revokes a key at once and keeps it readable with its revocation time; another client cannot', async () => {
    const key = await registeredKey();
    const path = `/api/v1/merchants/signing-keys/${key.kid}`;
    expect((await stack.request<ErrorBody>('DELETE', path, { apiKey: otherMerchant })).status).toBe(404);
    const revoked = await revoke(merchant, key.kid);
    expect(revoked.status).toBe(200);
    expect(revoked.json.data).toMatchObject({
      kid: key.kid,
      status: 'revoked',
      revokedAt: stack.clock.now().toISOString(),
    });
    stack.clock.advance(60_000);
    const again = await revoke(merchant, key.kid);
    expect(again.json.data.revokedAt).toBe(revoked.json.data.revokedAt);
    expect(await publishedKey(key.kid)).toEqual(revoked.json.data);
    const unknown = await stack.request<ErrorBody>('GET', `/api/v1/merchant-keys/${'A'.repeat(43)}`, {
      apiKey: issuer,
    });
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'not_found']);
    // Revoked is revoked: registering it again does not bring it back.
    expect((await register(merchant, key.publicJwk)).status).toBe(409);
  });
});

describe.each(kinds)('a signed payment on %s', (kind) => {
  it.each<SigningAlgorithm>(['EdDSA', 'ES256'])(
    'is sealed with its %s signature, which the SDK verifies on the device with the published key',
    async (algorithm) => {
      const key = await registeredKey(merchant, algorithm);
      const body = receiptFields();
      // What the till does: the receipt the service will seal, signed.
      const receipt = toDigitalReceipt(body as FlattenedReceipt);
      const jws = await signReceipt(receipt, key.privateKey, key.kid);
      const created = await createPayment(kind, body, signedHeader(jws));
      expect(created.status).toBe(200);
      expect(stack.sandbox!.stats.paymentsCreated[kind]).toBe(1);
      const sealed = await opened(body.receiptId);
      // gateway_b charges at create: the service adds the network's references, outside the signature.
      const references =
        kind === 'gateway_b' ? { cardTransaction: expect.objectContaining({ gateway: kind }) } : {};
      expect(sealed).toEqual({ ...receipt, merchantSignature: { kid: key.kid, jws }, ...references });
      const published = await publishedKey(sealed.merchantSignature!.kid);
      expect(await verifyReceiptSignature(sealed, published.publicKey)).toEqual({
        kid: key.kid,
        alg: algorithm,
      });
      // The device refuses it once changed, wherever it was changed.
      const tampered = { ...sealed, summary: { ...sealed.summary, total: sealed.summary.total - 1 } };
      await expect(verifyReceiptSignature(tampered, published.publicKey)).rejects.toThrow(
        'The merchant signature does not match this receipt',
      );
    },
  );

  describe('a signature that does not stand is 400 invalid_signature, and nothing is charged or stored', () => {
    const refusals: [
      string,
      (body: Record<string, unknown>) => Promise<{ body: Record<string, unknown>; jws: string }>,
      string,
    ][] = [
      [
        'one byte of the receipt changed after signing',
        async (body) => {
          const key = till;
          const jws = await signFields(body, key);
          return { body: { ...body, merchantName: `${String(body.merchantName).slice(0, -1)}t` }, jws };
        },
        'mismatch',
      ],
      [
        "another merchant's kid",
        async (body) => {
          const key = otherTill;
          return {
            body,
            jws: await signFields(body, key),
          };
        },
        'foreign_kid',
      ],
      [
        'a revoked kid',
        async (body) => {
          const key = await registeredKey();
          const jws = await signFields(body, key);
          expect((await revoke(merchant, key.kid)).status).toBe(200);
          return { body, jws };
        },
        'revoked_kid',
      ],
      [
        'an unknown kid',
        async (body) => {
          const key = await newSigningKey();
          return {
            body,
            jws: await signFields(body, key),
          };
        },
        'unknown_kid',
      ],
      [
        'alg none',
        async (body) => {
          const key = till;
          return { body, jws: `${header({ alg: 'none', kid: key.kid })}..` };
        },
        'algorithm',
      ],
      [
        'an attached payload',
        async (body) => {
          const key = till;
          const jws = await signFields(body, key);
          const [protectedHeader, , signature] = jws.split('.');
          const payload = Buffer.from(canonicalJson(toDigitalReceipt(body as FlattenedReceipt))).toString(
            'base64url',
          );
          return { body, jws: `${protectedHeader}.${payload}.${signature}` };
        },
        'attached_payload',
      ],
      [
        'a signature over the flattened body instead of the DigitalReceipt',
        async (body) => {
          const key = till;
          const { amount: _amount, cardNonce: _nonce, ...fields } = body;
          return { body, jws: await signReceipt(fields, key.privateKey, key.kid) };
        },
        'mismatch',
      ],
      [
        'an ES256 header over an Ed25519 key',
        async (body) => {
          const key = till;
          const [, , signature] = (await signFields(body, key)).split('.');
          return { body, jws: `${header({ alg: 'ES256', kid: key.kid })}..${signature}` };
        },
        'algorithm',
      ],
    ];

    it.each(refusals)('%s', async (_what, make, reason) => {
      const { body, jws } = await make(receiptFields());
      stack.sandbox!.reset();
      const refused = await createPayment(kind, body, signedHeader(jws));
      expect([refused.status, refused.json.error.code, refused.json.error.details?.reason]).toEqual([
        400,
        'invalid_signature',
        reason,
      ]);
      expect(refused.json.error.message.length).toBeGreaterThan(20);
      await nothingLeft(body as { receiptId: string; merchantId: string });
      // The same request, rightly signed, then goes through: nothing of the refusal was in the way.
      const key = till;
      const good = await createPayment(kind, body, signedHeader(await signFields(body, key)));
      expect(good.status).toBe(200);
    });
  });

  it('needs transactionDate when signed: the receipt takes its times from it', async () => {
    const key = till;
    const body = receiptFields({ transactionDate: undefined });
    const receipt = toDigitalReceipt(body as FlattenedReceipt, stack.clock.now());
    const refused = await createPayment(
      kind,
      body,
      signedHeader(await signReceipt(receipt, key.privateKey, key.kid)),
    );
    expect([refused.status, refused.json.error.code, refused.json.error.details?.reason]).toEqual([
      400,
      'invalid_signature',
      'no_transaction_date',
    ]);
    await nothingLeft(body);
  });
});

describe.each(kinds)('a signed refund on %s', (kind) => {
  interface RefundReply {
    refundId: string;
    receiptId: string | null;
    amount: number;
  }
  const refund = (paymentId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    stack.request<Data<RefundReply> & ErrorBody>('POST', `/api/v1/payments/${kind}/${paymentId}/refunds`, {
      apiKey: merchant,
      body,
      headers,
    });

  it('seals the refund receipt the till signed, the second one computed with the first; a wrong one refunds nothing', async () => {
    // The sale, signed, paid.
    const body = receiptFields();
    const sale = toDigitalReceipt(body as FlattenedReceipt);
    const created = await createPayment(
      kind,
      body,
      signedHeader(await signReceipt(sale, till.privateKey, till.kid)),
    );
    expect(created.status).toBe(200);
    const { paymentId } = created.json.data;
    if (kind === 'gateway_a') {
      await (
        await sandboxStripe(stack)
      ).paymentIntents.confirm(paymentId, { payment_method: 'pm_card_visa' });
    }
    await statusBecomes(stack, issuer, body.receiptId, 'succeeded');
    const flatWhite = sale.items[0]!.lineItemId;
    const published = (await publishedKey(till.kid)).publicKey;

    // One flat white back: the till computes the refund receipt the service will make, and signs it.
    const first = {
      refundId: randomUUID(),
      items: [{ lineItemId: flatWhite, quantity: 1 }],
      reason: 'Cold',
      refundDate: '2026-11-21T10:00:00Z',
    };
    const firstReceipt = toRefundReceipt(sale, first);
    const firstJws = await signReceipt(firstReceipt, till.privateKey, till.kid);
    const made = await refund(paymentId, first, signedHeader(firstJws));
    expect(made.status).toBe(201);
    expect(made.json.data.receiptId).toBe(signedRefundReceiptId(sale.receiptId, first.refundId));
    const sealedFirst = await opened(made.json.data.receiptId!);
    // The refund's network references are the service's, sealed beside the signature and outside it.
    const references = { cardTransaction: expect.objectContaining({ gateway: kind }) };
    expect(sealedFirst).toEqual({
      ...firstReceipt,
      merchantSignature: { kid: till.kid, jws: firstJws },
      ...references,
    });
    expect(await verifyReceiptSignature(sealedFirst, published)).toMatchObject({ kid: till.kid });

    // What is left depends on what went before: the second refund is computed knowing the first.
    const refusedBefore = stack.sandbox!.stats.refundsCreated[kind];
    const second = { refundId: randomUUID(), amount: 300, refundDate: '2026-11-21T11:00:00Z' };
    const wrong = await refund(
      paymentId,
      second,
      signedHeader(
        await signReceipt(
          toRefundReceipt(sale, { ...second, amount: 301 }, [firstReceipt]),
          till.privateKey,
          till.kid,
        ),
      ),
    );
    expect([wrong.status, wrong.json.error.code, wrong.json.error.details?.reason]).toEqual([
      400,
      'invalid_signature',
      'mismatch',
    ]);
    const undated = await refund(
      paymentId,
      { refundId: second.refundId, amount: 300 },
      signedHeader(
        await signReceipt(toRefundReceipt(sale, second, [firstReceipt]), till.privateKey, till.kid),
      ),
    );
    expect([undated.status, undated.json.error.details?.reason]).toEqual([400, 'no_refund_date']);
    const unsignedDate = await refund(paymentId, second);
    expect([unsignedDate.status, unsignedDate.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(stack.sandbox!.stats.refundsCreated[kind]).toBe(refusedBefore);

    const secondReceipt = toRefundReceipt(sale, second, [firstReceipt]);
    const secondJws = await signReceipt(secondReceipt, till.privateKey, till.kid);
    const madeSecond = await refund(paymentId, second, signedHeader(secondJws));
    expect(madeSecond.status).toBe(201);
    const sealedSecond = await opened(madeSecond.json.data.receiptId!);
    expect(sealedSecond).toEqual({
      ...secondReceipt,
      merchantSignature: { kid: till.kid, jws: secondJws },
      ...references,
    });
    expect(await verifyReceiptSignature(sealedSecond, published)).toMatchObject({ kid: till.kid });
    expect(stack.sandbox!.stats.refundsCreated[kind]).toBe(refusedBefore + 1);
    // An unsigned refund still makes the service's own refund receipt, unsigned.
    const third = await refund(paymentId, { refundId: randomUUID(), amount: 100 });
    expect(third.status).toBe(201);
    expect((await opened(third.json.data.receiptId!)).merchantSignature).toBeUndefined();
  });
});

describe('a merchant that requires signatures', () => {
  it('cannot require them without a key; then an unsigned create or encrypt is refused and nothing is charged', async () => {
    const strict = (await stack.apiKey(['merchant'])).apiKey;
    const policy = async (requireSignatures: boolean) =>
      stack.request<Data<{ requireSignatures: boolean }> & ErrorBody>(
        'POST',
        '/api/v1/merchants/signing-policy',
        {
          apiKey: strict,
          body: { requireSignatures },
          headers: requireSignatures
            ? {}
            : await keyChangeProof(strict, 'signing-policy', 'requireSignatures=false'),
        },
      );
    expect((await policy(true)).status).toBe(409);
    const key = await registeredKey(strict);
    expect((await policy(true)).json.data.requireSignatures).toBe(true);
    for (const kind of kinds) {
      stack.sandbox!.reset();
      const body = receiptFields();
      const unsigned = await createPayment(kind, body, {}, strict);
      expect([unsigned.status, unsigned.json.error.code, unsigned.json.error.details?.reason]).toEqual([
        400,
        'invalid_signature',
        'unsigned',
      ]);
      expect(unsigned.json.error.message).toContain('requires signed receipts');
      await nothingLeft(body);
      const signed = await createPayment(kind, body, signedHeader(await signFields(body, key)), strict);
      expect(signed.status).toBe(200);
    }
    stack.sandbox!.reset();
    const body = receiptFields();
    const unsignedEncrypt = await encrypt(body, {}, strict);
    expect([unsignedEncrypt.status, unsignedEncrypt.json.error.code]).toEqual([400, 'invalid_signature']);
    await nothingLeft(body);
    // Listed with the keys; and lifted again.
    const listed = await stack.request<Data<{ requireSignatures: boolean }>>(
      'GET',
      '/api/v1/merchants/signing-keys',
      {
        apiKey: strict,
      },
    );
    expect(listed.json.data.requireSignatures).toBe(true);
    expect((await policy(false)).json.data.requireSignatures).toBe(false);
    expect((await encrypt(receiptFields(), {}, strict)).status).toBe(200);
  });
});

describe('an operator requires signatures with the admin CLI', () => {
  it('`merchants require-signatures --client` turns it on for that client only, and --off lifts it', async () => {
    const client = await stack.apiKey(['merchant']);
    const target = {
      doc: stack.deps.dynamo.doc,
      tables: {
        merchantKeys: stack.config.tables.merchantKeys!,
        audit: stack.config.tables.audit!,
        webhooks: stack.config.tables.webhooks!,
        webhookDeliveries: stack.config.tables.webhookDeliveries!,
        keyLog: stack.config.tables.keyLog!,
      },
    };
    const cli = (...args: string[]) =>
      runMerchantCommand(
        ['merchants', 'require-signatures', '--client', client.clientId, '--json', ...args],
        target,
        (line) => printed.push(line),
      );
    const printed: string[] = [];
    // Not without a key: every request of the client would be refused.
    await expect(cli()).rejects.toThrow(MerchantUsageError);
    const key = await registeredKey(client.apiKey);
    expect(await cli()).toMatchObject({ clientId: client.clientId, requireSignatures: true });
    const body = receiptFields();
    const refused = await encrypt(body, {}, client.apiKey);
    expect([refused.status, refused.json.error.code, refused.json.error.details?.reason]).toEqual([
      400,
      'invalid_signature',
      'unsigned',
    ]);
    // Another merchant client is not affected.
    expect((await encrypt(receiptFields())).status).toBe(200);
    const signed = await encrypt(body, signedHeader(await signFields(body, key)), client.apiKey);
    expect(signed.status).toBe(200);
    expect(await cli('--off')).toMatchObject({ requireSignatures: false });
    expect((await encrypt(receiptFields(), {}, client.apiKey)).status).toBe(200);
    expect(printed).toHaveLength(2);
    await expect(
      runMerchantCommand(['merchants', 'require-signatures', '--client', 'not-a-client'], target),
    ).rejects.toThrow('--client CLIENT_ID');
  });
});

describe('receipts/encrypt, signed', () => {
  it('flattened form: sealed with the signature over the receipt it maps to', async () => {
    const key = await registeredKey(merchant, 'ES256');
    const body = receiptFields();
    const receipt = toDigitalReceipt(body as FlattenedReceipt);
    const jws = await signReceipt(receipt, key.privateKey, key.kid);
    expect((await encrypt(body, signedHeader(jws))).status).toBe(200);
    const sealed = await opened(body.receiptId);
    expect(sealed).toEqual({ ...receipt, merchantSignature: { kid: key.kid, jws } });
    expect(await verifyReceiptSignature(sealed, (await publishedKey(key.kid)).publicKey)).toMatchObject({
      kid: key.kid,
    });
  });

  it('a DigitalReceipt 1.2 with every new field: sealed with the signature over all of it', async () => {
    const key = till;
    const body = flattenedReceipt12({
      recipientHashedPan: hashedPan,
      transactionDate: '2026-11-21T09:15:00Z',
    });
    const receipt = toDigitalReceipt(body as FlattenedReceipt);
    expect(receipt).toMatchObject({ version: '1.2', receiptCode: body.receiptCode, fiscal: body.fiscal });
    const jws = await signReceipt(receipt, key.privateKey, key.kid);
    expect((await encrypt(body, signedHeader(jws))).status).toBe(200);
    const sealed = await opened(body.receiptId);
    expect(sealed).toEqual({ ...receipt, merchantSignature: { kid: key.kid, jws } });
    const published = (await publishedKey(key.kid)).publicKey;
    expect(await verifyReceiptSignature(sealed, published)).toMatchObject({ kid: key.kid });
    // A breakdown changed after signing does not verify on the device.
    const changed = structuredClone(sealed) as typeof sealed & {
      summary: { taxBreakdown: { taxAmount: number }[] };
    };
    changed.summary.taxBreakdown[0]!.taxAmount += 1;
    await expect(verifyReceiptSignature(changed, published)).rejects.toThrow();
  });

  it('nested form: sealed with the signature over its receipt as sent', async () => {
    const key = till;
    const receipt = sampleReceipt() as unknown as DigitalReceipt;
    const jws = await signReceipt(receipt, key.privateKey, key.kid);
    const body = {
      receipt,
      recipientIdentifier: { type: 'email', value: 'sam@example.com' },
      recipientHashedPan: hashedPan,
    };
    expect((await encrypt(body, signedHeader(jws))).status).toBe(200);
    const sealed = await opened(receipt.receiptId);
    expect(sealed).toEqual({ ...receipt, merchantSignature: { kid: key.kid, jws } });
    expect(await verifyReceiptSignature(sealed, (await publishedKey(key.kid)).publicKey)).toMatchObject({
      kid: key.kid,
    });
  });

  it.each(['nested', 'flattened'] as const)(
    "%s form: a changed byte, another merchant's or a revoked kid, alg none, an attached payload and a signature over the request body are refused, and nothing is stored",
    async (form) => {
      const key = till;
      const fields = receiptFields();
      const receipt =
        form === 'nested'
          ? (sampleReceipt() as unknown as DigitalReceipt)
          : toDigitalReceipt(fields as FlattenedReceipt);
      const bodyOf = (changed: DigitalReceipt | Record<string, unknown>) =>
        form === 'nested'
          ? {
              receipt: changed,
              recipientIdentifier: { type: 'email', value: 'sam@example.com' },
              recipientHashedPan: hashedPan,
            }
          : changed;
      const jws = await signReceipt(receipt, key.privateKey, key.kid);
      const [protectedHeader, , signature] = jws.split('.');
      const changed =
        form === 'nested'
          ? bodyOf({ ...receipt, notes: 'Thank you?' })
          : bodyOf({ ...fields, merchantName: 'Corner Coffee Roasterz' });
      const revoked = await registeredKey();
      const revokedJws = await signReceipt(receipt, revoked.privateKey, revoked.kid);
      expect((await revoke(merchant, revoked.kid)).status).toBe(200);
      const asSent = bodyOf(form === 'nested' ? receipt : fields);
      const cases: [unknown, string, string][] = [
        [changed, jws, 'mismatch'],
        [asSent, await signReceipt(receipt, otherTill.privateKey, otherTill.kid), 'foreign_kid'],
        [asSent, revokedJws, 'revoked_kid'],
        // The request body (the flattened fields, or the nested form's envelope of the receipt) signed
        // instead of the DigitalReceipt the service seals.
        [asSent, await signReceipt(asSent as Record<string, unknown>, key.privateKey, key.kid), 'mismatch'],
        [
          bodyOf(form === 'nested' ? receipt : fields),
          `${protectedHeader}.${Buffer.from(canonicalJson(receipt)).toString('base64url')}.${signature}`,
          'attached_payload',
        ],
        [
          bodyOf(form === 'nested' ? receipt : fields),
          `${header({ alg: 'none', kid: key.kid })}..`,
          'algorithm',
        ],
      ];
      for (const [body, candidate, reason] of cases) {
        const refused = await encrypt(body, signedHeader(candidate));
        expect([refused.status, refused.json.error.code, refused.json.error.details?.reason]).toEqual([
          400,
          'invalid_signature',
          reason,
        ]);
        await nothingLeft({ receiptId: receipt.receiptId, merchantId: receipt.merchant.merchantId });
      }
    },
  );

  it('nested form: a merchantSignature written into the receipt is refused, not sealed unchecked', async () => {
    const receipt = { ...sampleReceipt(), merchantSignature: { kid: 'A'.repeat(43), jws: 'e30..e30' } };
    const refused = await encrypt({
      receipt,
      recipientIdentifier: { type: 'email', value: 'sam@example.com' },
    });
    expect([refused.status, refused.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(refused.json.error.details?.fields?.[0]?.field).toBe('receipt.merchantSignature');
  });
});

describe("the SDK's toDigitalReceipt is the service's mapping", () => {
  const { amount: _amount, ...readmeEncrypt } = readmePaymentBody;
  const fixtures: [string, () => Record<string, unknown>][] = [
    ['the flattened fixture, every field', () => flattenedReceipt()],
    [
      'no transactionDate (the time is the request’s)',
      () => flattenedReceipt({ transactionDate: undefined }),
    ],
    ['mock items', () => flattenedReceipt({ items: [], mockItems: true })],
    [
      'the README’s payment body, as an encrypt body',
      () => ({ ...readmeEncrypt, receiptId: randomUUID(), transactionId: randomUUID() }),
    ],
    [
      'the README’s encrypt body',
      () => ({ ...readmeEncryptBody, receiptId: randomUUID(), transactionId: randomUUID() }),
    ],
    [
      'the required fields only (every default)',
      () => ({
        receiptId: randomUUID(),
        merchantId: randomUUID(),
        merchantName: 'Kiosk',
        transactionId: randomUUID(),
        subtotal: 300,
        taxAmount: 0,
        totalAmount: 300,
        items: [{ lineItemId: randomUUID(), name: 'Tea', quantity: 1, unitPrice: 300, totalPrice: 300 }],
      }),
    ],
    [
      'an address in part, no card',
      () =>
        flattenedReceipt({
          merchantStreet: undefined,
          merchantPostalCode: undefined,
          cardLast4: undefined,
          cardBrand: undefined,
          paymentMethod: 'cash',
        }),
    ],
  ];

  it.each(fixtures)('%s: the service seals what the SDK builds', async (_what, make) => {
    const body: Record<string, unknown> = { ...make(), recipientHashedPan: hashedPan };
    const stored = await encrypt(body);
    expect(stored.status).toBe(200);
    const sealed = await opened(String(body.receiptId));
    // The stack's clock stands still: its now is the request's.
    expect(sealed).toEqual(toDigitalReceipt(body as unknown as FlattenedReceipt, stack.clock.now()));
  });
});
