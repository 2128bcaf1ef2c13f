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
  type ReceiptServiceClient,
} from '../../packages/sdk/src/index.js';
import { contractValidator } from '../support/contract.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
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

beforeAll(async () => {
  stack = await startTestStack();
  const recordingFetch = async (request: Request): Promise<Response> => {
    sentBodies.push(await request.clone().text());
    return checkedFetch(request);
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

afterAll(async () => {
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
    const health = await anonymous.GET('/api/v1/health');
    expect(health.response.status).toBe(200);
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

  it('never sends the private key: it cannot be exported, and no request body held key material beyond public keys', async () => {
    const device = await generateDeviceKey();
    await expect(crypto.subtle.exportKey('pkcs8', device.privateKey)).rejects.toThrow();
    await expect(crypto.subtle.exportKey('jwk', device.privateKey)).rejects.toThrow();
    expect(sentBodies.filter((body) => /"d"\s*:/.test(body))).toEqual([]);
  });
});
