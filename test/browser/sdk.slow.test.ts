import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'puppeteer-core';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { launchBrowser, watchPage, type BrowserSession, type PageWatch } from '../support/browser.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  data: T;
}

/**
 * The SDK's openEnvelope inside Chromium, on the browser's own crypto.subtle: the key pair is made
 * in the page, the server seals a receipt for its public key, and the page opens it. And merchant
 * signatures: made in the page, sealed by the server, verified in the page and refused when tampered.
 */
describe('SDK in a browser', () => {
  let stack: TestStack;
  let session: BrowserSession;
  let page: Page;
  let watch: PageWatch;
  let merchant: string;
  let issuer: string;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
    session = await launchBrowser();
    page = await session.browser.newPage();
    watch = await watchPage(page, new URL(stack.url).origin);
    // The console's page gives an origin and policy ('self'); the SDK bundle is its /console/sdk.js.
    await page.goto(`${stack.url}/console`, { waitUntil: 'networkidle0' });
    await page.addScriptTag({ url: '/console/sdk.js' });
  }, 60_000);

  afterAll(async () => {
    await session?.close();
    await stack?.close();
  });

  it.each(['RSA-OAEP-256', 'ECDH-ES+A256KW'])(
    'opens a server-sealed envelope for a %s key made in the browser, and refuses a tampered one',
    async (algorithm) => {
      const publicKey = (await page.evaluate(
        `ReceiptSdk.generateDeviceKey({ algorithm: ${JSON.stringify(algorithm)} })
           .then((key) => { window.deviceKey = key; return key.publicKey; })`,
      )) as string;
      const imported = await stack.request<Data<{ keyId: string; algorithm: string }>>(
        'POST',
        '/api/v1/onboarding/keys',
        { apiKey: issuer, body: { publicKey } },
      );
      expect(imported.status).toBe(201);
      expect(imported.json.data.algorithm).toBe(algorithm);
      const hashedPan = newHashedPan();
      const registered = await stack.request('POST', '/api/v1/onboarding/register', {
        apiKey: issuer,
        body: { hashedPan, publicKey, keyId: imported.json.data.keyId },
      });
      expect(registered.status).toBe(200);
      const receipt = sampleReceipt();
      const sealed = await stack.request<Data<{ keyBundle: { algorithm: string } }>>(
        'POST',
        '/api/v1/receipts/encrypt',
        {
          apiKey: merchant,
          body: {
            receipt,
            recipientIdentifier: { type: 'email', value: 'device@example.com' },
            recipientHashedPan: hashedPan,
          },
        },
      );
      expect(sealed.status).toBe(200);
      const envelope = sealed.json.data;
      expect(envelope.keyBundle.algorithm).toBe(algorithm);

      const opened = await page.evaluate(
        `ReceiptSdk.openEnvelope(${JSON.stringify(envelope)}, window.deviceKey.privateKey)`,
      );
      expect(opened).toEqual(JSON.parse(JSON.stringify(receipt)));

      // One flipped character of the ciphertext: the same uniform error, no plaintext.
      const tampered = JSON.parse(JSON.stringify(envelope)) as Record<string, unknown>;
      const ciphertext = String(tampered.ciphertext);
      tampered.ciphertext = (ciphertext[0] === 'A' ? 'B' : 'A') + ciphertext.slice(1);
      const refused = await page.evaluate(
        `ReceiptSdk.openEnvelope(${JSON.stringify(tampered)}, window.deviceKey.privateKey)
           .then(() => 'opened', (error) => error.name)`,
      );
      expect(refused).toBe('EnvelopeError');
    },
  );

  it.each(['EdDSA', 'ES256'])(
    "signs in the browser; verifyReceiptSignature passes a %s receipt sealed by the server and refuses it tampered, on Chromium's WebCrypto",
    async (algorithm) => {
      // The till: a key made in the page, registered; the receipt signed in the page.
      const key = (await page.evaluate(
        `ReceiptSdk.generateSigningKey({ algorithm: ${JSON.stringify(algorithm)} })
           .then((key) => { window.signingKey = key; return { kid: key.kid, publicJwk: key.publicJwk }; })`,
      )) as { kid: string; publicJwk: Record<string, string> };
      // A merchant client of its own (its first key needs no Key-Change-Proof), and the key's proof of
      // possession, signed in the page with the SDK over a fresh challenge.
      const till = (await stack.apiKey(['merchant'])).apiKey;
      const challenge = await stack.request<Data<{ nonce: string; clientId: string }>>(
        'POST',
        '/api/v1/merchants/signing-keys/challenges',
        { apiKey: till },
      );
      const { nonce, clientId } = challenge.json.data;
      const statement = { action: 'register', clientId, kid: key.kid, nonce };
      const proof = (await page.evaluate(
        `ReceiptSdk.signKeyProof(${JSON.stringify(statement)}, window.signingKey.privateKey, ${JSON.stringify(key.kid)})`,
      )) as string;
      const registered = await stack.request('POST', '/api/v1/merchants/signing-keys', {
        apiKey: till,
        body: { publicKey: key.publicJwk, proof },
      });
      expect(registered.status).toBe(201);
      const receipt = sampleReceipt();
      const jws = (await page.evaluate(
        `ReceiptSdk.signReceipt(${JSON.stringify(receipt)}, window.signingKey.privateKey, ${JSON.stringify(key.kid)})`,
      )) as string;
      const publicKey = (await page.evaluate(
        `ReceiptSdk.generateDeviceKey().then((device) => { window.deviceKey = device; return device.publicKey; })`,
      )) as string;
      const imported = await stack.request<Data<{ keyId: string }>>('POST', '/api/v1/onboarding/keys', {
        apiKey: issuer,
        body: { publicKey },
      });
      const hashedPan = newHashedPan();
      await stack.request('POST', '/api/v1/onboarding/register', {
        apiKey: issuer,
        body: { hashedPan, publicKey, keyId: imported.json.data.keyId },
      });
      const sealed = await stack.request<Data<Record<string, unknown>>>('POST', '/api/v1/receipts/encrypt', {
        apiKey: till,
        body: {
          receipt,
          recipientIdentifier: { type: 'email', value: 'device@example.com' },
          recipientHashedPan: hashedPan,
        },
        headers: { 'Receipt-Signature': jws },
      });
      expect(sealed.status).toBe(200);
      const published = await stack.request<Data<{ publicKey: Record<string, string> }>>(
        'GET',
        `/api/v1/merchant-keys/${key.kid}`,
        { apiKey: issuer },
      );
      // The device: opens the envelope, checks the signature with the published key.
      const checked = await page.evaluate(`(async () => {
        const receipt = await ReceiptSdk.openEnvelope(${JSON.stringify(sealed.json.data)}, window.deviceKey.privateKey);
        const key = ${JSON.stringify(published.json.data.publicKey)};
        const verified = await ReceiptSdk.verifyReceiptSignature(receipt, key);
        const refusal = (changed) => ReceiptSdk.verifyReceiptSignature(changed, key).then(
          () => 'verified',
          (error) => error.name + ': ' + error.reason,
        );
        return {
          verified,
          signedBy: receipt.merchantSignature.kid,
          tampered: await refusal({ ...receipt, summary: { ...receipt.summary, total: receipt.summary.total + 1 } }),
          renamed: await refusal({ ...receipt, merchant: { ...receipt.merchant, name: receipt.merchant.name + '.' } }),
          stripped: await refusal({ ...receipt, merchantSignature: undefined }),
        };
      })()`);
      expect(checked).toEqual({
        verified: { kid: key.kid, alg: algorithm },
        signedBy: key.kid,
        tampered: 'ReceiptSignatureError: mismatch',
        renamed: 'ReceiptSignatureError: mismatch',
        stripped: 'ReceiptSignatureError: unsigned',
      });
    },
  );

  it('ran on the page with no policy violation, no other origin and no script error', async () => {
    expect(await watch.cspViolations()).toEqual([]);
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.errors).toEqual([]);
  });
});
