import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { flattenedDecrypt } from 'jose';
import { toFlattenedJwe, type SealedEnvelope } from '../../lib/crypto/envelope.js';
import {
  createClient,
  generateDeviceKey,
  importPrivateKey,
  openEnvelope,
  type DeviceKey,
  type KeyWrapAlgorithm,
  verifyWebhook,
  type components,
  type ReceiptServiceClient,
  type WebhookEvent,
} from '@receipt-service/sdk';
import { contractValidator } from '../support/contract.js';
import { keyFingerprint, privateKeysIn } from '../support/key-material.js';
import { flattenedReceipt, gatewayFields, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { patience, pollUntil } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * The SDK's generated client against the service over HTTP: the specification's flow (keys made by
 * the service, decrypted by the service) and the device flow (key made by the SDK, imported, receipt
 * opened by the SDK), with nothing but the generated types. It compiles only while those types match
 * the service's document, and every response is also checked against the document at run time.
 */

/** fetch that holds every response to the OpenAPI contract, as stack.request does. */
const contract = contractValidator();
async function checkedFetch(request: Request): Promise<Response> {
  const method = request.method;
  const response = await fetch(request);
  const text = await response.clone().text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const url = new URL(request.url);
  contract.assert({
    method,
    path: url.pathname + url.search,
    status: response.status,
    headers: response.headers,
    text,
    json,
  });
  return response;
}

let stack: TestStack;
let issuer: ReceiptServiceClient;
let merchant: ReceiptServiceClient;
/** What the service was sent for the private key, on every request, to show a device key never is. */
const sentBodies: string[] = [];
/**
 * The private keys the service itself made (generate-keys): the specification's flow sends them back
 * to be decrypted with. Any other private key in a request body left a device.
 */
const issuedKeys = new Set<string>();

beforeAll(async () => {
  stack = await startTestStack();
  const recordingFetch = async (request: Request): Promise<Response> => {
    sentBodies.push(await request.clone().text());
    const response = await checkedFetch(request);
    if (new URL(request.url).pathname.endsWith('/onboarding/generate-keys')) {
      for (const key of privateKeysIn(await response.clone().text())) issuedKeys.add(keyFingerprint(key));
    }
    return response;
  };
  issuer = createClient({
    baseUrl: stack.url,
    apiKey: (await stack.apiKey(['issuer'])).apiKey,
    fetch: recordingFetch,
  });
  merchant = createClient({
    baseUrl: `${stack.url}/`,
    apiKey: (await stack.apiKey(['merchant'])).apiKey,
    fetch: recordingFetch,
  });
});

const receivers: Server[] = [];

afterAll(async () => {
  await Promise.all(receivers.map((server) => new Promise((resolve) => server.close(resolve))));
  await stack?.close();
});

async function register(keyId: string, publicKey: string): Promise<{ userId: string; hashedPan: string }> {
  const hashedPan = newHashedPan();
  const registered = await issuer.POST('/api/v1/onboarding/register', {
    body: { hashedPan, publicKey, keyId },
  });
  expect(registered.response.status).toBe(200);
  return { userId: registered.data!.data.userId, hashedPan };
}

async function encryptFor(hashedPan: string) {
  const receipt = sampleReceipt();
  const encrypted = await merchant.POST('/api/v1/receipts/encrypt', {
    body: {
      receipt,
      recipientIdentifier: { type: 'email', value: 'cardholder@example.com' },
      recipientHashedPan: hashedPan,
    },
  });
  expect(encrypted.response.status).toBe(200);
  return { receipt, envelope: encrypted.data!.data };
}

describe('the specification flow with the generated client', () => {
  it('generate-keys, register, encrypt, grant-access, decrypt: and the SDK opens the same envelope', async () => {
    const keys = await issuer.POST('/api/v1/onboarding/generate-keys');
    expect(keys.response.status).toBe(200);
    const { keyId, publicKey, privateKey } = keys.data!.data;
    const user = await register(keyId, publicKey);
    const { receipt, envelope } = await encryptFor(user.hashedPan);
    expect(envelope).toMatchObject({ receiptId: receipt.receiptId, keyId });

    const token = await issuer.POST('/api/v1/keys/grant-access', { body: { userId: user.userId, keyId } });
    expect(token.response.status).toBe(200);
    const decrypted = await issuer.POST('/api/v1/receipts/decrypt', {
      body: { envelope, accessTokenId: token.data!.data.tokenId, privateKey },
    });
    expect(decrypted.response.status).toBe(200);
    expect(decrypted.data!.data).toEqual(receipt);

    // The same private key, imported into WebCrypto: the device can open what the service opened.
    const imported = await importPrivateKey(privateKey);
    expect(imported.algorithm).toBe('RSA-OAEP-256');
    expect(await openEnvelope(envelope, imported.privateKey)).toEqual(receipt);
  });

  it('errors come back typed, in the documented envelope', async () => {
    const refused = await issuer.POST('/api/v1/receipts/decrypt', {
      body: {
        envelope: (await encryptFor(newHashedPan())).envelope,
        accessTokenId: crypto.randomUUID(),
        privateKey: 'AAAA',
      },
    });
    expect(refused.data).toBeUndefined();
    expect(refused.error?.success).toBe(false);
    expect(refused.error?.error.code).toEqual(expect.any(String));
    const anonymous = createClient({ baseUrl: stack.url, fetch: checkedFetch });
    const unauthenticated = await anonymous.POST('/api/v1/onboarding/generate-keys');
    expect(unauthenticated.response.status).toBe(401);
  });
});

describe('the device flow with the SDK', () => {
  const flows: [string, KeyWrapAlgorithm, (device: DeviceKey) => string | DeviceKey['publicJwk']][] = [
    ['P-256 key sent as SPKI', 'ECDH-ES+A256KW', (device) => device.publicKey],
    ['P-256 key sent as JWK', 'ECDH-ES+A256KW', (device) => device.publicJwk],
    ['RSA key sent as SPKI', 'RSA-OAEP-256', (device) => device.publicKey],
  ];

  it.each(flows)(
    '%s: imported, registered, sealed by the service and opened on the device',
    async (_name, algorithm, publicKeyOf) => {
      const device = await generateDeviceKey({ algorithm });
      const imported = await issuer.POST('/api/v1/onboarding/keys', {
        body: { publicKey: publicKeyOf(device) },
      });
      expect(imported.response.status).toBe(201);
      expect(imported.data!.data).toMatchObject({ algorithm, publicKey: device.publicKey });
      const user = await register(imported.data!.data.keyId, imported.data!.data.publicKey);
      const { receipt, envelope } = await encryptFor(user.hashedPan);
      expect(envelope.keyBundle.algorithm).toBe(algorithm);

      expect(await openEnvelope(envelope, device.privateKey)).toEqual(receipt);
      const jose = await flattenedDecrypt(toFlattenedJwe(envelope as SealedEnvelope), device.privateKey);
      expect(JSON.parse(new TextDecoder().decode(jose.plaintext))).toEqual(receipt);
    },
  );

  it('never sends the private key: it cannot be exported, and no request body held a private key the service did not make', async () => {
    const device = await generateDeviceKey();
    await expect(crypto.subtle.exportKey('pkcs8', device.privateKey)).rejects.toThrow();
    await expect(crypto.subtle.exportKey('jwk', device.privateKey)).rejects.toThrow();
    expect(sentBodies.length).toBeGreaterThan(0);
    const leaked = sentBodies.filter((body) =>
      privateKeysIn(body).some((key) => !issuedKeys.has(keyFingerprint(key))),
    );
    expect(leaked).toEqual([]);
  });

  it('the key-material check finds a private key in every form a body could carry it, and nothing else', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const x25519 = generateKeyPairSync('x25519');
    const der = (key: KeyObject, type: 'pkcs8' | 'pkcs1' | 'sec1') => key.export({ format: 'der', type });
    const pem = (key: KeyObject, type: 'pkcs8' | 'pkcs1' | 'sec1') =>
      key.export({ format: 'pem', type }).toString();
    const carried: [string, KeyObject, string][] = [
      [
        'PKCS#8 DER in base64 (MII...)',
        rsa.privateKey,
        JSON.stringify({ privateKey: der(rsa.privateKey, 'pkcs8').toString('base64') }),
      ],
      [
        'PKCS#8 DER in base64url',
        ec.privateKey,
        JSON.stringify({ key: der(ec.privateKey, 'pkcs8').toString('base64url') }),
      ],
      ['PKCS#8 PEM', rsa.privateKey, JSON.stringify({ pem: pem(rsa.privateKey, 'pkcs8') })],
      ['PKCS#1 PEM', rsa.privateKey, JSON.stringify({ pem: pem(rsa.privateKey, 'pkcs1') })],
      [
        'PKCS#1 DER in base64',
        rsa.privateKey,
        JSON.stringify({ k: der(rsa.privateKey, 'pkcs1').toString('base64') }),
      ],
      [
        'SEC1 DER in base64',
        ec.privateKey,
        JSON.stringify({ k: der(ec.privateKey, 'sec1').toString('base64') }),
      ],
      [
        'X25519 PKCS#8 in base64',
        x25519.privateKey,
        JSON.stringify({ k: der(x25519.privateKey, 'pkcs8').toString('base64') }),
      ],
      ['a JWK', ec.privateKey, JSON.stringify({ deep: [{ jwk: ec.privateKey.export({ format: 'jwk' }) }] })],
      [
        'a JWK inside a JSON string',
        ec.privateKey,
        JSON.stringify({ text: JSON.stringify(ec.privateKey.export({ format: 'jwk' })) }),
      ],
      ['PEM in a raw body', ec.privateKey, `key=${pem(ec.privateKey, 'pkcs8')}`],
    ];
    for (const [form, key, body] of carried) {
      expect({ form, found: privateKeysIn(body).map(keyFingerprint) }).toEqual({
        form,
        found: [keyFingerprint(key)],
      });
    }
    const innocent = [
      JSON.stringify({ publicKey: ec.publicKey.export({ format: 'der', type: 'spki' }).toString('base64') }),
      JSON.stringify({ publicKey: rsa.publicKey.export({ format: 'pem', type: 'spki' }).toString() }),
      JSON.stringify({ jwk: ec.publicKey.export({ format: 'jwk' }) }),
      JSON.stringify({ random: randomBytes(1_200).toString('base64'), privateKey: 'AAAA' }),
    ];
    for (const body of innocent) expect(privateKeysIn(body)).toEqual([]);
  });
});

/** The issuer's webhook endpoint: plain http on loopback, which the local stack accepts. */
async function startReceiver(): Promise<{
  url: string;
  received: { headers: IncomingHttpHeaders; body: string }[];
}> {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(204).end();
    });
  });
  receivers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/receipts`, received };
}

/** The flattened fixture is untyped test data; the client checks it against the generated request type. */
const paymentBody = (
  gateway: 'gateway_a' | 'gateway_b',
  hashedPan: string,
): components['schemas']['CreatePaymentRequest'] => {
  const body = flattenedReceipt({ recipientHashedPan: hashedPan });
  return {
    ...(body as unknown as components['schemas']['CreatePaymentRequest']),
    ...gatewayFields(gateway, body),
  };
};

describe('the device flow end to end: paid, announced by webhook, fetched and opened on the device', () => {
  it('a P-256 device key opens receipts paid on both gateways, found by webhook and in the inbox', async () => {
    const device = await generateDeviceKey();
    const imported = await issuer.POST('/api/v1/onboarding/keys', { body: { publicKey: device.publicKey } });
    expect(imported.response.status).toBe(201);
    const user = await register(imported.data!.data.keyId, imported.data!.data.publicKey);

    const receiver = await startReceiver();
    const webhook = await issuer.POST('/api/v1/webhooks', {
      body: { url: receiver.url, events: ['receipt.available'] },
    });
    expect(webhook.response.status).toBe(201);
    const { secret } = webhook.data!.data;

    const paid: { gateway: 'gateway_a' | 'gateway_b'; paymentId: string; receiptId: string }[] = [];
    for (const gateway of ['gateway_a', 'gateway_b'] as const) {
      const body = paymentBody(gateway, user.hashedPan);
      const payment = await merchant.POST('/api/v1/payments/{gateway}/create', {
        params: { path: { gateway } },
        body,
      });
      expect(payment.response.status).toBe(200);
      paid.push({ gateway, paymentId: payment.data!.data.paymentId, receiptId: body.receiptId });
    }

    // The webhook: verified with the SDK, it names each receipt and nothing of its content. The issuer
    // is this file's, so a dispatcher running behind on a loaded machine may also announce receipts of
    // its other users, paid by earlier tests: every delivery must verify, and this user's are the two.
    const verified = () =>
      receiver.received.map((delivery) =>
        verifyWebhook<WebhookEvent>(delivery.body, delivery.headers as Record<string, string>, secret),
      );
    const events = await pollUntil(
      'both receipt.available deliveries',
      async () => {
        const mine = verified().filter((event) => event.data.userId === user.userId);
        return mine.length >= paid.length ? mine : undefined;
      },
      { timeoutMs: patience(30_000), intervalMs: 100 },
    );
    expect(events.map((event) => event.data.receiptId).sort()).toEqual(paid.map((p) => p.receiptId).sort());
    for (const event of verified()) expect(event.type).toBe('receipt.available');

    // The inbox lists the same receipts.
    const inbox = await issuer.GET('/api/v1/users/{userId}/receipts', {
      params: { path: { userId: user.userId } },
    });
    expect(inbox.response.status).toBe(200);
    expect(inbox.data!.data.receipts.map((entry) => entry.receiptId).sort()).toEqual(
      paid.map((p) => p.receiptId).sort(),
    );

    // Fetched by receipt id (from the webhook) and by payment, and opened on the device.
    for (const { gateway, paymentId, receiptId } of paid) {
      const byId = await issuer.GET('/api/v1/receipts/{receiptId}', { params: { path: { receiptId } } });
      expect(byId.response.status).toBe(200);
      const opened = await openEnvelope<{ receiptId: string }>(byId.data!.data.envelope, device.privateKey);
      expect(opened.receiptId).toBe(receiptId);
      const byPayment = await issuer.GET('/api/v1/payments/{gateway}/{paymentId}/receipt', {
        params: { path: { gateway, paymentId } },
      });
      expect(byPayment.response.status).toBe(200);
      expect(await openEnvelope(byPayment.data!.data.envelope, device.privateKey)).toEqual(opened);
    }
  });
});
