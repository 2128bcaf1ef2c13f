import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'puppeteer-core';
import {
  launchBrowser,
  screenshot,
  watchPage,
  type BrowserSession,
  type PageWatch,
} from '../support/browser.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/** GET /console in headless Chromium: the device flow end to end against a local stack. */
describe('developer console in a browser', () => {
  let stack: TestStack;
  let session: BrowserSession;
  let page: Page;
  let watch: PageWatch;
  let lastKeys: string[] = [];

  beforeAll(async () => {
    stack = await startTestStack();
    session = await launchBrowser();
    page = await session.browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    watch = await watchPage(page, new URL(stack.url).origin);
  }, 60_000);

  afterAll(async () => {
    await session?.close();
    await stack?.close();
  });

  // A flow is a dozen requests plus the bundle built on first use: well over a minute on a loaded CI box.
  const run = async (path: 'device' | 'spec', algorithm: string, gateway: string) => {
    const merchant = await stack.apiKey(['merchant']);
    const issuer = await stack.apiKey(['issuer']);
    await page.goto(`${stack.url}/console`, { waitUntil: 'networkidle0' });
    await page.type('#merchantKey', merchant.apiKey);
    await page.type('#issuerKey', issuer.apiKey);
    await page.select('#path', path);
    await page.select('#algorithm', algorithm);
    await page.select('#gateway', gateway);
    lastKeys = [merchant.apiKey, issuer.apiKey];
    await page.click('#run');
    await page.waitForSelector('#steps[data-done]', { timeout: 100_000 });
    const done = await page.$eval('#steps', (steps) => steps.getAttribute('data-done'));
    if (done !== 'ok') {
      // The page says where the flow stopped; the test fails on `done` below with it in view.
      console.error(String(await page.evaluate('document.body.innerText')));
    }
    return {
      done,
      receipt: await page.$eval('#receipt pre', (pre) => pre.textContent ?? ''),
      refundReceipt: await page.$eval('#refund-receipt pre', (pre) => pre.textContent ?? ''),
      statuses: await page.$$eval('.status', (shown) =>
        shown.map((entry) => entry.getAttribute('data-status')),
      ),
      text: String(await page.evaluate('document.body.innerText')),
      keys: [merchant.apiKey, issuer.apiKey],
    };
  };

  it('runs the device flow: key made in the browser, envelope opened by the SDK, confirmed, refunded in part', async () => {
    const result = await run('device', 'ECDH-ES+A256KW', 'gateway_a');
    await screenshot(page, 'console-device-flow', { fullPage: true });
    expect(result.done).toBe('ok');
    expect(JSON.parse(result.receipt)).toMatchObject({
      merchant: { name: 'Corner Coffee' },
      summary: { total: 978 },
    });
    for (const step of [
      'POST /api/v1/onboarding/keys',
      'POST /api/v1/onboarding/register',
      'POST /api/v1/payments/gateway_a/create',
      'POST /api/v1/keys/grant-access',
      'GET /api/v1/receipts/',
      'GET /api/v1/users/',
      'POST /api/v1/webhooks',
      '/deliveries',
      'Confirm the payment in the gateway sandbox',
      '/refunds',
    ]) {
      expect(result.text).toContain(step);
    }
    // The lifecycle: confirmed in the sandbox, then one of two flat whites refunded, with its receipt.
    expect(result.statuses).toEqual(['succeeded', 'partially_refunded']);
    const sale = JSON.parse(result.receipt) as { receiptId: string };
    expect(JSON.parse(result.refundReceipt)).toMatchObject({
      type: 'refund',
      relatedReceiptId: sale.receiptId,
      items: [{ name: 'Flat white', quantity: 1, totalPrice: 450 }],
      summary: { subtotal: 450, totalTax: 39, total: 489 },
      notes: 'One coffee was cold',
    });
    expect(await page.$$eval('.step.failed', (failed) => failed.length)).toBe(0);
    // The webhook's signing secret is in the response, not on the page.
    expect(result.text).toContain('(signing secret,');
    expect(result.text).not.toMatch(/whsec_/);
  }, 120_000);

  it('shows no API key and keeps nothing in storage or cookies', async () => {
    const html = await page.content();
    const text = String(await page.evaluate('document.body.innerText'));
    // The keys the device flow above typed in: none, and this test would look for nothing.
    expect(lastKeys).toEqual([expect.stringMatching(/\S{20,}/), expect.stringMatching(/\S{20,}/)]);
    for (const key of lastKeys) {
      expect(html).not.toContain(key);
      expect(text).not.toContain(key);
    }
    expect(await page.evaluate('localStorage.length + sessionStorage.length')).toBe(0);
    expect(await page.evaluate('indexedDB.databases().then((found) => found.length)')).toBe(0);
    expect(await page.cookies()).toEqual([]);
  });

  it('runs the specification path on gateway_b: generate-keys and payments/decrypt', async () => {
    const result = await run('spec', 'ECDH-ES+A256KW', 'gateway_b');
    expect(result.keys).toEqual([expect.stringMatching(/\S{20,}/), expect.stringMatching(/\S{20,}/)]);
    for (const key of result.keys) expect(result.text).not.toContain(key);
    expect(result.done).toBe('ok');
    expect(JSON.parse(result.receipt)).toMatchObject({ merchant: { name: 'Corner Coffee' } });
    expect(result.text).toContain('POST /api/v1/payments/decrypt');
    // gateway_b completes at creation; the refund receipt is opened on the server like the sale.
    expect(result.statuses).toEqual(['succeeded', 'partially_refunded']);
    expect(JSON.parse(result.refundReceipt)).toMatchObject({ type: 'refund', summary: { total: 489 } });
    expect(result.text).toContain('POST /api/v1/receipts/decrypt');
    // The private key generate-keys returned is never put on the page.
    expect(result.text).toContain('(private key,');
  }, 120_000);

  it('loads from this origin only, with no policy violation and no script error', async () => {
    expect(await watch.cspViolations()).toEqual([]);
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.errors).toEqual([]);
  });
});
