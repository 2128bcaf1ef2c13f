import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  generateDeviceKey,
  generateSigningKey,
  openEnvelope,
  signKeyProof,
  signReceipt,
  toDigitalReceipt,
  verifyReceiptSignature,
  type DeviceKey,
  type DigitalReceipt,
  type FlattenedReceipt,
  type SigningKey,
} from '@receipt-service/sdk';
import {
  issueReceiptCredential,
  presentReceipt,
  verifyReceiptPresentation,
} from '@receipt-service/sdk/credential';
import { flattenedReceipt, gatewayFields, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { fetchReceipt } from '../support/lifecycle.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * Presentable receipts over HTTP (issue 39 item 4): a till sends `receiptCredential` (an SD-JWT VC of
 * the receipt by its ES256 signing key) on receipts/encrypt and payments/{gateway}/create; the service
 * checks it (signature by an active key of that merchant client, `iss` its JWKS URL, receipt id, date,
 * currency and total those of the receipt) before anything is stored or charged and seals it in the
 * receipt beside merchantSignature, where the cardholder's device finds it and presents part of it. A
 * credential that does not stand is 400 invalid_signature naming receiptCredential, and nothing is left.
 */
interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: {
    code: string;
    message: string;
    details?: { reason?: string; fields?: { field: string; message: string }[] };
  };
}
type Sealed = DigitalReceipt & { receiptCredential?: string };

let stack: TestStack;
let merchant: { apiKey: string; clientId: string };
let other: { apiKey: string; clientId: string };
let issuer: string;
let device: DeviceKey;
let hashedPan: string;
let till: SigningKey;
let otherTill: SigningKey;

/** Registers a new ES256 key for the client as its first key: proof of possession by the key itself. */
async function firstKey(apiKey: string): Promise<SigningKey> {
  const key = await generateSigningKey({ algorithm: 'ES256' });
  const challenge = await stack.request<Data<{ nonce: string; clientId: string }>>(
    'POST',
    '/api/v1/merchants/signing-keys/challenges',
    { apiKey },
  );
  const { nonce, clientId } = challenge.json.data;
  const proof = await signKeyProof(
    { action: 'register', clientId, kid: key.kid, nonce },
    key.privateKey,
    key.kid,
  );
  const reply = await stack.request('POST', '/api/v1/merchants/signing-keys', {
    apiKey,
    body: { publicKey: key.publicJwk, proof },
  });
  expect(reply.status).toBe(201);
  return key;
}

beforeAll(async () => {
  stack = await startTestStack();
  merchant = await stack.apiKey(['merchant']);
  other = await stack.apiKey(['merchant']);
  issuer = (await stack.apiKey(['issuer'])).apiKey;
  device = await generateDeviceKey();
  const imported = await stack.request<Data<{ keyId: string; publicKey: string }>>(
    'POST',
    '/api/v1/onboarding/keys',
    { apiKey: issuer, body: { publicKey: device.publicKey } },
  );
  hashedPan = newHashedPan();
  const registered = await stack.request('POST', '/api/v1/onboarding/register', {
    apiKey: issuer,
    body: { hashedPan, publicKey: imported.json.data.publicKey, keyId: imported.json.data.keyId },
  });
  expect(registered.status).toBe(200);
  [till, otherTill] = await Promise.all([firstKey(merchant.apiKey), firstKey(other.apiKey)]);
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

beforeEach(() => stack.sandbox!.reset());

const jwksUrl = (clientId: string) => `${stack.url}/api/v1/merchants/${clientId}/jwks.json`;

/** The merchant's key set as a verifier holds it: the keys the service publishes under their kids. */
async function merchantJwks(...kids: string[]) {
  const keys = await Promise.all(
    kids.map(async (kid) => {
      const reply = await stack.request<
        Data<{ publicKey: { kty: string; crv: string; x: string; y: string } }>
      >('GET', `/api/v1/merchant-keys/${kid}`, { apiKey: issuer });
      expect(reply.status).toBe(200);
      return { ...reply.json.data.publicKey, kid, alg: 'ES256', use: 'sig' };
    }),
  );
  return { keys };
}

/** Flattened fields for the registered card, timed: the credential states the receipt's date. */
const receiptFields = (overrides: Record<string, unknown> = {}) =>
  flattenedReceipt({ recipientHashedPan: hashedPan, transactionDate: '2026-11-21T09:15:00Z', ...overrides });

/** What the till does: the credential over the receipt the service will seal. */
const credentialFor = (
  body: Record<string, unknown>,
  key = till,
  issuerUrl = jwksUrl(merchant.clientId),
  changes: Partial<FlattenedReceipt> = {},
) =>
  issueReceiptCredential(
    toDigitalReceipt({ ...body, ...changes } as FlattenedReceipt),
    key.privateKey,
    key.kid,
    {
      issuer: issuerUrl,
    },
  );

const encrypt = (body: unknown, apiKey = merchant.apiKey, headers: Record<string, string> = {}) =>
  stack.request<Data<{ receiptId: string }> & ErrorBody>('POST', '/api/v1/receipts/encrypt', {
    apiKey,
    body,
    headers,
  });

const createPayment = (kind: 'gateway_a' | 'gateway_b', body: Record<string, unknown>) =>
  stack.request<Data<{ paymentId: string }> & ErrorBody>('POST', `/api/v1/payments/${kind}/create`, {
    apiKey: merchant.apiKey,
    body: { ...gatewayFields(kind, body as never), ...body },
  });

const opened = async (receiptId: string): Promise<Sealed> =>
  openEnvelope<Sealed>((await fetchReceipt(stack, issuer, receiptId)).envelope, device.privateKey);

async function nothingLeft(body: { receiptId: string; merchantId: string }) {
  expect(stack.sandbox!.stats.paymentsCreated).toEqual({ gateway_a: 0, gateway_b: 0 });
  expect(Object.values(stack.sandbox!.stats.requests).every((count) => count === 0)).toBe(true);
  expect((await stack.request('GET', `/api/v1/receipts/${body.receiptId}`, { apiKey: issuer })).status).toBe(
    404,
  );
  expect(await stack.deps.repos.merchants.ownerOf(body.merchantId)).toBeNull();
}

describe('a receipt credential sent with a receipt', () => {
  it('is sealed beside merchantSignature; the cardholder presents merchant, date and total, which verify', async () => {
    const body = receiptFields();
    const receipt = toDigitalReceipt(body as FlattenedReceipt);
    const receiptCredential = await credentialFor(body);
    const jws = await signReceipt(receipt, till.privateKey, till.kid);
    const reply = await encrypt({ ...body, receiptCredential }, merchant.apiKey, {
      'Receipt-Signature': jws,
    });
    expect(reply.status).toBe(200);

    const sealed = await opened(body.receiptId);
    expect(sealed).toEqual({ ...receipt, merchantSignature: { kid: till.kid, jws }, receiptCredential });
    // The signature covers the receipt, not the credential (signed by the same key on its own).
    expect(await verifyReceiptSignature(sealed, till.publicJwk)).toEqual({ kid: till.kid, alg: 'ES256' });

    const presentation = await presentReceipt(sealed.receiptCredential!);
    const { claims } = await verifyReceiptPresentation(presentation, await merchantJwks(till.kid));
    expect(claims).toEqual({
      iss: jwksUrl(merchant.clientId),
      iat: expect.any(Number),
      vct: 'VerifiablevReceiptSDJWT',
      Party: { partyName_: { name: body.merchantName } },
      PurchaseReceipt: { issueDate: '2026-11-21', documentCurrencyCode: receipt.summary.currency },
      MonetaryTotal: { payableAmount: receipt.summary.total / 100 },
    });
  });

  it('on the nested form: taken beside the receipt, refused inside it', async () => {
    const receipt = sampleReceipt();
    const receiptCredential = await issueReceiptCredential(receipt, till.privateKey, till.kid, {
      issuer: jwksUrl(merchant.clientId),
    });
    const recipientIdentifier = { type: 'email', value: 'a@example.com' };
    const inside = await encrypt({ receipt: { ...receipt, receiptCredential }, recipientIdentifier });
    expect(inside.status).toBe(400);
    expect(inside.json.error.details?.fields).toEqual([
      expect.objectContaining({ field: 'receipt.receiptCredential' }),
    ]);
    const beside = await encrypt({
      receipt,
      recipientIdentifier,
      recipientHashedPan: hashedPan,
      receiptCredential,
    });
    expect(beside.status).toBe(200);
    expect((await opened(receipt.receiptId)).receiptCredential).toBe(receiptCredential);
  });
});

describe('a receipt credential that does not stand is 400 invalid_signature, and nothing is stored', () => {
  const refusals: [string, (body: Record<string, unknown>) => Promise<string>, string][] = [
    [
      'signed by a key the merchant never registered',
      async (body) => credentialFor(body, await generateSigningKey({ algorithm: 'ES256' })),
      'credential_signature',
    ],
    [
      'signed by a key the merchant has revoked',
      async (body) => {
        // A second key, added with a proof by the first and revoked with one: it signed before, not now.
        const key = await generateSigningKey({ algorithm: 'ES256' });
        const proven = async (statement: Record<string, string>, signer: SigningKey) => {
          const { nonce, clientId } = (
            await stack.request<Data<{ nonce: string; clientId: string }>>(
              'POST',
              '/api/v1/merchants/signing-keys/challenges',
              { apiKey: merchant.apiKey },
            )
          ).json.data;
          return signKeyProof({ ...statement, clientId, nonce } as never, signer.privateKey, signer.kid);
        };
        const added = await stack.request('POST', '/api/v1/merchants/signing-keys', {
          apiKey: merchant.apiKey,
          body: { publicKey: key.publicJwk, proof: await proven({ action: 'register', kid: key.kid }, key) },
          headers: { 'Key-Change-Proof': await proven({ action: 'add-key', target: key.kid }, till) },
        });
        expect(added.status).toBe(201);
        const credential = await credentialFor(body, key);
        const revoked = await stack.request('DELETE', `/api/v1/merchants/signing-keys/${key.kid}`, {
          apiKey: merchant.apiKey,
          headers: { 'Key-Change-Proof': await proven({ action: 'revoke-key', target: key.kid }, till) },
        });
        expect(revoked.status).toBe(200);
        return credential;
      },
      'credential_signature',
    ],
    [
      "signed by another merchant client's key",
      (body) => credentialFor(body, otherTill, jwksUrl(other.clientId)),
      'credential_signature',
    ],
    [
      'with a disclosure altered after issue (the total)',
      async (body) => {
        const credential = await credentialFor(body);
        return credential
          .split('~')
          .map((part) => {
            const decoded = /^[\w-]+$/.test(part) ? Buffer.from(part, 'base64url').toString('utf8') : '';
            if (!decoded.includes('"payableAmount"')) return part;
            const [salt] = JSON.parse(decoded) as [string];
            return Buffer.from(JSON.stringify([salt, 'payableAmount', 0.01])).toString('base64url');
          })
          .join('~');
      },
      'credential_signature',
    ],
    [
      'naming another merchant client as issuer',
      (body) => credentialFor(body, till, jwksUrl(other.clientId)),
      'credential_issuer',
    ],
    [
      'of another total',
      (body) =>
        credentialFor(body, till, jwksUrl(merchant.clientId), { totalAmount: 1, subtotal: 1, taxAmount: 0 }),
      'credential_claims',
    ],
    [
      'of another receipt id',
      (body) =>
        credentialFor(body, till, jwksUrl(merchant.clientId), {
          receiptId: '00000000-0000-4000-8000-000000000000',
        }),
      'credential_claims',
    ],
    [
      'of another day',
      (body) =>
        credentialFor(body, till, jwksUrl(merchant.clientId), { transactionDate: '2026-11-20T09:15:00Z' }),
      'credential_claims',
    ],
  ];

  it.each(refusals)('on receipts/encrypt: a credential %s', async (_name, make, reason) => {
    const body = receiptFields();
    const reply = await encrypt({ ...body, receiptCredential: await make(body) });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('invalid_signature');
    expect(reply.json.error.details).toEqual(
      expect.objectContaining({ reason, fields: [expect.objectContaining({ field: 'receiptCredential' })] }),
    );
    await nothingLeft(body);
  });

  it('a malformed one is 400 invalid_request naming the field', async () => {
    const body = receiptFields();
    const reply = await encrypt({ ...body, receiptCredential: 'not an sd-jwt' });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.json.error.details?.fields)).toContain('receiptCredential');
    await nothingLeft(body);
  });
});

describe('on payments/{gateway}/create', () => {
  it('gateway_b charges and seals a good credential; a bad one charges nothing and stores nothing', async () => {
    const good = receiptFields();
    const receiptCredential = await credentialFor(good);
    const created = await createPayment('gateway_b', { ...good, receiptCredential });
    expect(created.status).toBe(200);
    expect(stack.sandbox!.stats.paymentsCreated.gateway_b).toBe(1);
    expect((await opened(good.receiptId)).receiptCredential).toBe(receiptCredential);

    stack.sandbox!.reset();
    const bad = receiptFields();
    const refused = await createPayment('gateway_b', {
      ...bad,
      receiptCredential: await credentialFor(bad, otherTill, jwksUrl(other.clientId)),
    });
    expect(refused.status).toBe(400);
    expect(refused.json.error.details?.reason).toBe('credential_signature');
    await nothingLeft(bad);
  });
});
