import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { build } from 'esbuild';
import type { Page } from 'puppeteer-core';
import { renderReceiptHtml, type Receipt } from '@receipt-service/sdk';
import { launchBrowser, screenshot, type BrowserSession } from '../support/browser.js';
import { markupSale, MARKUP, pdfText, saleAndRefund } from '../sdk/receipts.js';

/**
 * renderReceiptHtml's documents in headless Chromium at a phone's width (390 px) and a desktop's
 * (1280 px): everything a reader needs is on the page, nothing runs over the edge, the page asks
 * the network for nothing, and markup in a receipt is shown as text. renderReceiptPdf runs in the
 * page too, on the SDK bundled for browsers. Screenshots in test-artifacts/.
 */

const en = { locale: 'en-US' };
const { sale, refund } = saleAndRefund();
const pages: Record<string, string> = {
  '/sale.html': renderReceiptHtml(sale, en),
  '/refund.html': renderReceiptHtml(refund, en),
  '/markup.html': renderReceiptHtml(markupSale(), en),
  '/sdk.html': '<!doctype html><html><head><script src="/sdk.js"></script></head><body></body></html>',
};

let server: Server;
let origin: string;
let session: BrowserSession;

beforeAll(async () => {
  const bundle = await build({
    // The SDK's two entry points as one global: the core and `@receipt-service/sdk/pdf`.
    stdin: {
      contents: "export * from '@receipt-service/sdk';\nexport * from '@receipt-service/sdk/pdf';\n",
      resolveDir: fileURLToPath(new URL('../..', import.meta.url)),
      loader: 'ts',
    },
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    globalName: 'ReceiptSdk',
    logLevel: 'silent',
  });
  pages['/sdk.js'] = bundle.outputFiles[0]!.text;
  server = createServer((request, response) => {
    const body = pages[request.url ?? ''];
    if (body === undefined) {
      response.writeHead(404).end();
      return;
    }
    const type = request.url!.endsWith('.js') ? 'text/javascript' : 'text/html';
    response.writeHead(200, { 'Content-Type': `${type}; charset=utf-8`, 'Cache-Control': 'no-store' });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  session = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await session?.close();
  await new Promise((resolve) => server?.close(resolve));
});

interface Visit {
  page: Page;
  /** Every request the page made, its own document included. */
  requests: string[];
  dialogs: string[];
  errors: string[];
}

async function visit(path: string, width: number): Promise<Visit> {
  const page = await session.browser.newPage();
  await page.setViewport({ width, height: 844 });
  const visit: Visit = { page, requests: [], dialogs: [], errors: [] };
  page.on('request', (request) => visit.requests.push(request.url()));
  page.on('dialog', (dialog) => {
    visit.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('pageerror', (error) => visit.errors.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error') visit.errors.push(message.text());
  });
  await page.goto(`${origin}${path}`, { waitUntil: 'networkidle0' });
  return visit;
}

/** What a reader sees of each item line, of the totals and of the merchant. */
const looked = (page: Page) =>
  page.evaluate(`(() => ({
    text: document.body.innerText,
    rows: [...document.querySelectorAll('tbody tr')].map((row) => row.innerText.replace(/\\s+/g, ' ').trim()),
    total: [...document.querySelectorAll('.grand')].map((cell) => cell.innerText),
    heading: document.querySelector('h1').innerText,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    stacked: getComputedStyle(document.querySelector('thead')).display === 'none',
    priceMark: getComputedStyle(document.querySelector('td.price'), '::before').content,
    images: document.images.length,
  }))()`) as Promise<{
    text: string;
    rows: string[];
    total: string[];
    heading: string;
    overflow: number;
    stacked: boolean;
    priceMark: string;
    images: number;
  }>;

const cases: { name: string; path: string; receipt: Receipt; rows: string[]; total: string[] }[] = [
  {
    name: 'sale',
    path: '/sale.html',
    receipt: sale,
    rows: [
      'Flat white 12 oz, oat milk SKU FW-12 Sales tax 8.625% $0.78 2 $4.50 $9.00',
      'Almond croissant Sales tax 8.625% $0.45 1 $5.25 $5.25',
    ],
    total: ['Total', '$17.48'],
  },
  {
    name: 'refund',
    path: '/refund.html',
    receipt: refund,
    rows: ['Flat white Sales tax 8.625% -$0.39 1 $4.50 -$4.50'],
    total: ['Total refunded', '-$4.89'],
  },
];

describe('a rendered receipt in Chromium', () => {
  describe.each([390, 1280])('at %i px', (width) => {
    it.each(cases)(
      'shows the $name: merchant, every item, the totals; no overflow, no request',
      async (expected) => {
        const { page, requests, dialogs, errors } = await visit(expected.path, width);
        const seen = await looked(page);
        await screenshot(page, `receipt-${expected.name}-${width}`, { fullPage: true });
        expect(seen.heading).toBe(expected.receipt.merchant.name);
        // Quantity, unit price and amount are cells; narrow, the price cell shows "× " before it.
        expect(seen.rows).toEqual(expected.rows);
        expect(seen.priceMark).toBe(width < 480 ? '"× "' : 'none');
        expect(seen.total).toEqual(expected.total);
        for (const label of ['Subtotal', 'Tax']) expect(seen.text).toContain(label);
        expect(seen.stacked).toBe(width < 480);
        expect(seen.overflow).toBeLessThanOrEqual(0);
        if (expected.name === 'refund') {
          expect(seen.text).toContain(`Refund of receipt ${sale.receiptId}`);
          expect(seen.text).toMatch(/REFUND/);
        }
        expect(requests).toEqual([`${origin}${expected.path}`]);
        expect({ dialogs, errors, images: seen.images }).toEqual({ dialogs: [], errors: [], images: 0 });
        await page.close();
      },
    );

    it('shows an item named <img src=x onerror=alert(1)> as that text: no image, no dialog, no request', async () => {
      const { page, requests, dialogs, errors } = await visit('/markup.html', width);
      const seen = await looked(page);
      await screenshot(page, `receipt-markup-${width}`, { fullPage: true });
      expect(seen.rows[0]).toContain(MARKUP);
      expect(seen.images).toBe(0);
      expect(requests).toEqual([`${origin}/markup.html`]);
      expect({ dialogs, errors }).toEqual({ dialogs: [], errors: [] });
      await page.close();
    });
  });

  it('makes the PDF in the browser, where a PDF reader finds the totals', async () => {
    const { page, errors } = await visit('/sdk.html', 390);
    const base64 = (await page.evaluate(
      `ReceiptSdk.renderReceiptPdf(${JSON.stringify(refund)}, { locale: 'en-US' })
         .then((bytes) => btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join('')))`,
    )) as string;
    const runs = await pdfText(new Uint8Array(Buffer.from(base64, 'base64')));
    expect(runs[runs.indexOf('Total refunded') + 1]).toBe('-$4.89');
    expect(runs).toContain('Corner Coffee Roasters');
    expect(errors).toEqual([]);
    await page.close();
  });
});
