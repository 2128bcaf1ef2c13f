import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Frame, Page } from 'puppeteer-core';
import {
  artifactsDir,
  launchBrowser,
  screenshot,
  watchPage,
  type BrowserSession,
  type PageWatch,
} from '../support/browser.js';
import { patience, pollUntil } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { pdfText } from '../sdk/receipts.js';
import { ublErrors, validateUbl } from '../support/standards.js';

/**
 * GET /console in headless Chromium against a local stack: the device flow end to end (twice in one
 * page, on one webhook that the page deletes when it closes), the receipt rendered by the SDK, the
 * match call, the specification's path, and a phone's width (390 px), where the PDF is made too.
 */
/** Clicks `button` and reads the one file with `suffix` Chromium downloads for it. */
async function download(page: Page, button: string, suffix: string): Promise<{ name: string; text: string }> {
  const folder = await mkdtemp(join(tmpdir(), 'console-download-'));
  try {
    const cdp = await page.createCDPSession();
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the download did not complete in 20 s')), 20_000);
      cdp.on('Browser.downloadProgress', (event) => {
        if (event.state === 'inProgress') return;
        clearTimeout(timer);
        if (event.state === 'completed') resolve();
        else reject(new Error(`the download ended ${event.state}`));
      });
    });
    await cdp.send('Browser.setDownloadBehavior', {
      behavior: 'allow',
      downloadPath: folder,
      eventsEnabled: true,
    });
    await page.click(button);
    await done;
    const files = (await readdir(folder)).filter((name) => name.endsWith(suffix));
    expect(files).toHaveLength(1);
    const text = await readFile(join(folder, files[0]!), 'utf8');
    await cdp.detach();
    return { name: files[0]!, text };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

describe('developer console in a browser', () => {
  let stack: TestStack;
  let session: BrowserSession;
  const watches: PageWatch[] = [];
  const watchOf = new Map<Page, PageWatch>();
  let keys: { merchant: string; issuer: string };

  beforeAll(async () => {
    stack = await startTestStack();
    session = await launchBrowser();
    keys = {
      merchant: (await stack.apiKey(['merchant'])).apiKey,
      issuer: (await stack.apiKey(['issuer'])).apiKey,
    };
  }, 60_000);

  afterAll(async () => {
    await session?.close();
    await stack?.close();
  });

  const consoleUrl = () => `${stack.url}/console`;
  const receiverUrl = () => `${new URL(stack.url).origin}/console/webhook-sink`;

  async function openConsole(width: number, issuer = keys.issuer): Promise<Page> {
    const page = await session.browser.newPage();
    await page.setViewport({ width, height: 844 });
    const watch = await watchPage(page, new URL(stack.url).origin);
    watches.push(watch);
    watchOf.set(page, watch);
    await page.goto(consoleUrl(), { waitUntil: 'networkidle0' });
    await typeKeys(page, issuer);
    return page;
  }

  async function typeKeys(page: Page, issuer = keys.issuer): Promise<void> {
    await page.type('#merchantKey', keys.merchant);
    await page.type('#issuerKey', issuer);
  }

  /**
   * Closes a console, first checking it broke none of its policies, as a person leaving it does: the
   * page is navigated away from, then its tab closed. A tab closed outright gives the page's pagehide
   * handlers Chromium's unload timeout (about 500 ms) and is then torn down with them unrun, so on a
   * loaded machine the page's keepalive DELETE was never sent: a pagehide handler that starts 700 ms
   * late loses it on every close, one 300 ms late on none (tried with chromium-headless-shell). A
   * navigation waits for the old page's pagehide however long it takes, and the DELETE leaves then.
   */
  async function closeConsole(page: Page): Promise<void> {
    expect(await watchOf.get(page)!.cspViolations()).toEqual([]);
    await page.goto('about:blank');
    await page.close();
  }

  /** The issuer's webhooks, as the API lists them. */
  async function webhooksOf(issuer = keys.issuer): Promise<{ webhookId: string; url: string }[]> {
    const listed = await stack.request<{ data: { webhooks: { webhookId: string; url: string }[] } }>(
      'GET',
      '/api/v1/webhooks',
      { apiKey: issuer },
    );
    expect(listed.status).toBe(200);
    return listed.json.data.webhooks;
  }

  /**
   * Until the issuer has no webhook: the page's keepalive DELETE has left when its pagehide ran, and
   * is answered a moment later, after the page is gone.
   */
  async function webhooksGone(issuer = keys.issuer): Promise<void> {
    await pollUntil(
      "the page's webhook to be deleted",
      async () => ((await webhooksOf(issuer)).length === 0 ? true : undefined),
      { timeoutMs: patience(20_000), intervalMs: 100 },
    );
  }

  // A flow is a dozen requests plus the bundle built on first use: well over a minute on a loaded CI box.
  async function run(
    page: Page,
    path: 'device' | 'spec',
    gateway: string,
    algorithm = 'ECDH-ES+A256KW',
    signature: 'EdDSA' | 'ES256' | 'none' = 'EdDSA',
  ) {
    await page.select('#path', path);
    await page.select('#algorithm', algorithm);
    await page.select('#gateway', gateway);
    await page.select('#signature', signature);
    await page.click('#run');
    await page.waitForSelector('#steps[data-done]', { timeout: 100_000 });
    const done = await page.$eval('#steps', (steps) => steps.getAttribute('data-done'));
    const match = await page.$eval('#match', (step) => step.getAttribute('data-match'));
    if (done !== 'ok') {
      // The page says where the flow stopped; the test fails on `done` below with it in view.
      console.error(String(await page.evaluate('document.body.innerText')));
    }
    return {
      done,
      receipt: JSON.parse(await page.$eval('#receipt pre', (pre) => pre.textContent ?? '')) as Record<
        string,
        unknown
      >,
      refundReceipt: JSON.parse(
        await page.$eval('#refund-receipt pre', (pre) => pre.textContent ?? ''),
      ) as Record<string, unknown>,
      statuses: await page.$$eval('.status', (shown) =>
        shown.map((entry) => entry.getAttribute('data-status')),
      ),
      match,
      /** What the device said of each receipt's merchant signature, by section. */
      signatures: Object.fromEntries(
        await page.$$eval('.step .signature', (lines) =>
          lines.map((line) => [
            line.closest('.step')?.id ?? '',
            { state: line.getAttribute('data-signature'), text: line.textContent ?? '' },
          ]),
        ),
      ) as Record<string, { state: string | null; text: string }>,
      text: String(await page.evaluate('document.body.innerText')),
      failedSteps: await page.$$eval('.step.failed', (failed) => failed.length),
    };
  }

  /** The rendered receipt inside its sandboxed frame: what a reader sees there. */
  async function renderedReceipt(page: Page, sectionId: string) {
    await page.waitForSelector(`#${sectionId} iframe[data-loaded]`);
    const handle = await page.$(`#${sectionId} iframe`);
    const frame = (await handle!.contentFrame()) as Frame;
    return {
      sandbox: await page.$eval(`#${sectionId} iframe`, (iframe) => iframe.getAttribute('sandbox')),
      ...((await frame.evaluate(`(() => ({
        text: document.body.innerText,
        title: document.querySelector('h1').innerText,
        total: [...document.querySelectorAll('.grand')].map((cell) => cell.innerText),
        policy: document.querySelector('meta[http-equiv="Content-Security-Policy"]').content,
        styled: getComputedStyle(document.querySelector('article')).borderRadius !== '0px',
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        width: window.innerWidth,
        scripts: document.scripts.length,
      }))()`)) as {
        text: string;
        title: string;
        total: string[];
        policy: string;
        styled: boolean;
        overflow: number;
        width: number;
        scripts: number;
      }),
    };
  }

  it('runs the device path twice in one page on one webhook, shows the receipt rendered, and leaves no webhook behind', async () => {
    const page = await openConsole(1280);
    const first = await run(page, 'device', 'gateway_a');
    await screenshot(page, 'console-device-flow', { fullPage: true });
    expect(first.done).toBe('ok');
    expect(first.failedSteps).toBe(0);
    expect(first.receipt).toMatchObject({ merchant: { name: 'Corner Coffee' }, summary: { total: 978 } });
    for (const step of [
      'POST /api/v1/onboarding/keys',
      'POST /api/v1/onboarding/register',
      'POST /api/v1/payments/gateway_a/create',
      'GET /api/v1/receipts/',
      'GET /api/v1/users/',
      'POST /api/v1/webhooks',
      '/deliveries',
      'Confirm the payment in the gateway sandbox',
      '/refunds',
      'POST /api/v1/users/',
    ]) {
      expect(first.text).toContain(step);
    }
    // The device opens the envelope with its own key: no access token is asked for.
    expect(first.text).not.toContain('grant-access');
    expect(first.text).not.toContain('Access token');
    // The lifecycle: confirmed in the sandbox, then one of two flat whites refunded, with its receipt.
    expect(first.statuses).toEqual(['succeeded', 'partially_refunded']);
    expect(first.refundReceipt).toMatchObject({
      type: 'refund',
      relatedReceiptId: first.receipt.receiptId,
      items: [{ name: 'Flat white', quantity: 1, totalPrice: 450 }],
      summary: { subtotal: 450, totalTax: 39, total: 489 },
      notes: 'One coffee was cold',
    });
    // The issuer's statement line is matched to this receipt.
    expect(first.match).toBe('found');
    expect(first.text).toContain(`→ receipt ${String(first.receipt.receiptId)}`);

    // The receipt as a person reads it: the SDK's HTML in a sandboxed frame, under its own policy.
    const sale = await renderedReceipt(page, 'receipt');
    expect(sale.sandbox).toBe('allow-same-origin');
    expect(sale.title).toBe('Corner Coffee');
    expect(sale.text).toContain('Flat white');
    expect(sale.total).toEqual(['Total', '$9.78']);
    expect(sale.policy).toContain("default-src 'none'");
    expect(sale.styled).toBe(true);
    expect(sale.scripts).toBe(0);
    const refund = await renderedReceipt(page, 'refund-receipt');
    expect(refund.total).toEqual(['Total refunded', '-$4.89']);
    // The refund as a UBL credit note, downloaded from the issuer's view, passes the official
    // artefacts (UBL 2.1 schema, EN 16931 and Peppol BIS 3.0 rules) with no error.
    const creditNote = await download(page, '#refund-receipt button.export-ubl', '.xml');
    expect(creditNote.name).toBe(`credit-note-${String(first.refundReceipt.receiptId)}.xml`);
    expect(creditNote.text).toContain('<CreditNote');
    expect(creditNote.text).toContain(`<cbc:ID>${String(first.receipt.receiptId)}</cbc:ID>`);
    const validated = await validateUbl({ creditNote: creditNote.text });
    expect(ublErrors(validated.creditNote!)).toEqual([]);
    // Every other export of the issuer's view downloads too.
    for (const format of ['vreceipt', 'versa', 'schema-org', 'csv']) {
      await page.click(`#refund-receipt button.export-${format}`);
      await page.waitForSelector(`#refund-receipt a.export-link-${format}`);
    }
    expect(await page.$$eval('.step.failed', (failed) => failed.length)).toBe(0);
    // The raw JSON is one click away.
    await page.click('#receipt details summary');
    expect(await page.evaluate(`document.querySelector('#receipt details').open`)).toBe(true);

    // Signed at the till with a key made on the page, verified on this device with the published key;
    // the same receipt with its total changed is not.
    expect(first.text).toContain('POST /api/v1/merchants/signing-keys');
    expect(first.text).toContain('Receipt-Signature: ');
    expect(first.receipt).toMatchObject({
      merchantSignature: { kid: expect.any(String), jws: expect.any(String) },
    });
    const kid = (first.receipt.merchantSignature as { kid: string }).kid;
    expect(first.signatures.receipt).toEqual({
      state: 'verified',
      text: `signed by Corner Coffee (kid ${kid}), verified on this device`,
    });
    expect(first.signatures['tampered-receipt']).toEqual({
      state: 'refused',
      text: 'not verified: The merchant signature does not match this receipt',
    });
    const tampered = await renderedReceipt(page, 'tampered-receipt');
    expect(tampered.total).toEqual(['Total', '$10.78']);
    // The refund receipt was signed at the till too (toRefundReceipt), and verifies the same way.
    expect(first.signatures['refund-receipt']).toEqual({
      state: 'verified',
      text: `signed by Corner Coffee (kid ${kid}), verified on this device`,
    });
    // The presentable receipt (issue 39): issued at the till as an SD-JWT VC and sealed in the receipt,
    // presented with merchant, date and total only, verified here, and what it hides listed.
    expect(first.text).toContain('issueReceiptCredential');
    expect(first.receipt.receiptCredential).toEqual(expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+~/));
    const presented = (await page.evaluate(`(() => {
      const section = document.querySelector('#presentation');
      return {
        state: section.querySelector('[data-presentation]')?.getAttribute('data-presentation'),
        shown: Object.fromEntries(
          [...section.querySelectorAll('dd[data-claim]')].map((cell) => [cell.dataset.claim, cell.textContent]),
        ),
        hidden: [...section.querySelectorAll('.hidden-claims li')].map((item) => item.dataset.claim),
        presentation: section.querySelector('pre')?.textContent ?? '',
      };
    })()`)) as { state: string; shown: Record<string, string>; hidden: string[]; presentation: string };
    expect(presented.state).toBe('verified');
    expect(presented.shown).toEqual({
      // The console's receipts are DigitalReceipt 1.2: the seller's legal name is the party's name.
      'Party.partyName_': 'Corner Coffee Roasters LLC',
      'PurchaseReceipt.issueDate': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      'MonetaryTotal.payableAmount': '9.78 USD',
    });
    expect(presented.hidden).toEqual(
      expect.arrayContaining([
        'PurchaseReceipt.iD',
        'MonetaryTotal.lineExtensionAmount',
        'TaxTotal',
        'PurchaseReceiptLine',
        'Payment',
      ]),
    );
    expect(presented.hidden).not.toContain('Party.partyName_');
    // The presentation itself, every part decoded, carries none of what it hides.
    const decoded = presented.presentation
      .split(/[.~]/)
      .map((part) => Buffer.from(part, 'base64url').toString('utf8'))
      .join('\n');
    expect(decoded).toContain('Corner Coffee');
    for (const hidden of [
      'Flat white',
      String(first.receipt.receiptId),
      'PurchaseReceiptLine',
      'transactionID',
    ]) {
      expect({ hidden, found: decoded.includes(hidden) }).toEqual({ hidden, found: false });
    }
    await (await page.$('#presentation'))!.screenshot({
      path: join(artifactsDir, 'console-presentation.png'),
    });
    await (await page.$('#receipt'))!.screenshot({ path: join(artifactsDir, 'console-signed-receipt.png') });
    await (await page.$('#tampered-receipt'))!.screenshot({
      path: join(artifactsDir, 'console-tampered-receipt.png'),
    });

    const afterFirst = await webhooksOf();
    expect(afterFirst).toEqual([expect.objectContaining({ url: receiverUrl() })]);

    const second = await run(page, 'device', 'gateway_b');
    expect(second.done).toBe('ok');
    expect(second.failedSteps).toBe(0);
    expect(second.match).toBe('found');
    expect(second.statuses).toEqual(['succeeded', 'partially_refunded']);
    expect(second.text).toContain('this visit’s, registered by an earlier run');
    expect(second.text).not.toContain('POST /api/v1/webhooks');
    // The signing key is this visit's too: made and registered once.
    expect(second.text).toContain(`Merchant signing key: this visit’s (EdDSA, kid ${kid})`);
    expect(second.signatures.receipt?.state).toBe('verified');
    expect(second.signatures['tampered-receipt']?.state).toBe('refused');
    // Still the one webhook of this visit, which heard of both runs' receipts.
    expect(await webhooksOf()).toEqual(afterFirst);
    const deliveries = await stack.request<{ data: { deliveries: unknown[] } }>(
      'GET',
      `/api/v1/webhooks/${afterFirst[0]!.webhookId}/deliveries`,
      { apiKey: keys.issuer },
    );
    expect(deliveries.json.data.deliveries.length).toBeGreaterThan(0);

    await closeConsole(page);
    await webhooksGone();
  }, 240_000);

  it('at 390 px: one column, nothing wider than the phone, the receipt stacked, a PDF made in the page; a reload reuses a webhook still there', async () => {
    // A webhook of this tab that a killed browser never deleted: sessionStorage still names it.
    const issuer = (await stack.apiKey(['issuer'])).apiKey;
    const left = await stack.request<{ data: { webhookId: string } }>('POST', '/api/v1/webhooks', {
      apiKey: issuer,
      body: { url: receiverUrl(), events: ['receipt.available'] },
    });
    expect(left.status).toBe(201);
    const leftId = left.json.data.webhookId;
    const page = await openConsole(390, issuer);
    await page.evaluate(`sessionStorage.setItem('receipt-console.webhookId', ${JSON.stringify(leftId)})`);
    await page.reload({ waitUntil: 'networkidle0' });
    await typeKeys(page, issuer);

    const result = await run(page, 'device', 'gateway_b', 'RSA-OAEP-256', 'ES256');
    await screenshot(page, 'console-device-flow-390', { fullPage: true });
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'console-form-390');
    await (await page.$('#receipt'))!.screenshot({ path: join(artifactsDir, 'console-receipt-390.png') });
    expect(result.done).toBe('ok');
    expect(result.failedSteps).toBe(0);
    expect(result.match).toBe('found');
    expect(result.text).toContain('reused, not registered again');
    expect(result.signatures.receipt?.state).toBe('verified');
    expect(result.signatures['tampered-receipt']?.state).toBe('refused');
    expect(result.text).not.toContain('POST /api/v1/webhooks');
    expect((await webhooksOf(issuer)).map((webhook) => webhook.webhookId)).toEqual([leftId]);

    const layout = (await page.evaluate(`(() => ({
      overflow: document.documentElement.scrollWidth - window.innerWidth,
      columns: getComputedStyle(document.querySelector('main')).gridTemplateColumns.split(' ').length,
      formRight: document.querySelector('#settings').getBoundingClientRect().right,
      runRight: document.querySelector('#run').getBoundingClientRect().right,
    }))()`)) as { overflow: number; columns: number; formRight: number; runRight: number };
    expect(layout.overflow).toBeLessThanOrEqual(0);
    expect(layout.columns).toBe(1);
    expect(layout.formRight).toBeLessThanOrEqual(390);
    expect(layout.runRight).toBeLessThanOrEqual(390);
    const sale = await renderedReceipt(page, 'receipt');
    expect(sale.width).toBeLessThanOrEqual(390);
    expect(sale.overflow).toBeLessThanOrEqual(0);
    expect(sale.total).toEqual(['Total', '$9.78']);

    // The PDF download: made by the SDK in this page (jsPDF, its optional helpers left out of the bundle).
    const downloads = await mkdtemp(join(tmpdir(), 'console-pdf-'));
    try {
      const cdp = await page.createCDPSession();
      // The file can be on disk before Chromium has written all of it: read it once the download says
      // it is complete (a read of a half-written PDF failed in pdf.js once in a full run).
      const downloaded = new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error('the PDF download did not complete in 20 s')),
          20_000,
        );
        cdp.on('Browser.downloadProgress', (event) => {
          if (event.state === 'inProgress') return;
          clearTimeout(timer);
          if (event.state === 'completed') resolve(event.guid);
          else reject(new Error(`the PDF download ended ${event.state}`));
        });
      });
      await cdp.send('Browser.setDownloadBehavior', {
        behavior: 'allow',
        downloadPath: downloads,
        eventsEnabled: true,
      });
      await page.click('#receipt button.pdf');
      await page.waitForSelector('#receipt a.pdf-link');
      await downloaded;
      const files = (await readdir(downloads)).filter((name) => name.endsWith('.pdf'));
      expect(files).toEqual([`receipt-${String(result.receipt.receiptId)}.pdf`]);
      const runs = await pdfText(new Uint8Array(await readFile(join(downloads, files[0]!))));
      expect(runs).toContain('Corner Coffee');
      expect(runs[runs.indexOf('Total') + 1]).toBe('$9.78');
    } finally {
      await rm(downloads, { recursive: true, force: true });
    }

    // API keys in memory only; sessionStorage holds the webhook id and nothing else.
    const stored = (await page.evaluate(
      'Object.fromEntries(Object.keys(sessionStorage).map((key) => [key, sessionStorage.getItem(key)]))',
    )) as Record<string, string>;
    expect(stored).toEqual({ 'receipt-console.webhookId': leftId });
    expect(await page.evaluate('localStorage.length')).toBe(0);
    // The merchant's signing keys are kept as a till keeps them (issue 36: a key is added only with a
    // proof by one it already has): non-extractable CryptoKeys in IndexedDB, and nothing else there.
    expect(await page.evaluate('indexedDB.databases().then((found) => found.map((db) => db.name))')).toEqual([
      'receipt-console',
    ]);
    const extractable = (await page.evaluate(`new Promise((resolve, reject) => {
      const opening = indexedDB.open('receipt-console');
      opening.onerror = () => reject(opening.error);
      opening.onsuccess = () => {
        const all = opening.result.transaction('signing-keys').objectStore('signing-keys').getAll();
        all.onsuccess = () => resolve(all.result.flat().map((key) => key.privateKey.extractable));
      };
    })`)) as boolean[];
    expect(extractable.length).toBeGreaterThan(0);
    expect(extractable.every((flag) => flag === false)).toBe(true);
    expect(await page.cookies()).toEqual([]);
    const html = await page.content();
    for (const key of [keys.merchant, issuer]) {
      expect(key).toMatch(/\S{20,}/);
      expect(html).not.toContain(key);
      expect(result.text).not.toContain(key);
    }

    // A reload is a page going away too: the webhook is deleted, and the next run registers one.
    await page.reload({ waitUntil: 'networkidle0' });
    await webhooksGone(issuer);
    await typeKeys(page, issuer);
    const again = await run(page, 'device', 'gateway_b', 'ECDH-ES+A256KW', 'none');
    expect(again.done).toBe('ok');
    expect(again.match).toBe('found');
    expect(again.text).toContain('Not there any more');
    expect(again.signatures.receipt).toEqual({ state: 'unsigned', text: 'not signed by the merchant' });
    expect(again.signatures['tampered-receipt']).toBeUndefined();
    expect(again.signatures['refund-receipt']?.state).toBe('unsigned');
    const renewed = await webhooksOf(issuer);
    expect(renewed).toHaveLength(1);
    expect(renewed[0]!.webhookId).not.toBe(leftId);
    await closeConsole(page);
    await webhooksGone(issuer);
  }, 300_000);

  it('runs the specification path on gateway_b: generate-keys, an access token, payments/decrypt', async () => {
    // An issuer of its own: the webhooks it lists are this test's alone.
    const issuer = (await stack.apiKey(['issuer'])).apiKey;
    const page = await openConsole(1280, issuer);
    const result = await run(page, 'spec', 'gateway_b', 'ECDH-ES+A256KW', 'ES256');
    expect(result.done).toBe('ok');
    expect(result.match).toBe('found');
    expect(result.receipt).toMatchObject({ merchant: { name: 'Corner Coffee' } });
    expect(result.text).toContain('POST /api/v1/keys/grant-access');
    expect(result.text).toContain('POST /api/v1/payments/decrypt');
    // gateway_b completes at creation; the refund receipt is opened on the server like the sale.
    expect(result.statuses).toEqual(['succeeded', 'partially_refunded']);
    expect(result.refundReceipt).toMatchObject({ type: 'refund', summary: { total: 489 } });
    expect(result.text).toContain('POST /api/v1/receipts/decrypt');
    // Decrypted on the server, checked on the device all the same.
    expect(result.signatures.receipt?.state).toBe('verified');
    // The private key generate-keys returned is never put on the page.
    expect(result.text).toContain('(private key,');
    // The webhook's signing secret is in the response, not on the page.
    expect(result.text).toContain('(signing secret,');
    expect(result.text).not.toMatch(/whsec_/);
    await closeConsole(page);
    await webhooksGone(issuer);
  }, 180_000);

  it("leaves jsPDF's optional helpers out of the console's scripts, which the SDK's PDF never calls", async () => {
    for (const script of ['/console/app.js', '/console/sdk.js']) {
      const text = await (await fetch(`${stack.url}${script}`)).text();
      // Bundled, html2canvas, DOMPurify and canvg were 0.9 MB of 1.7 MB; jsPDF imports them on demand.
      // The standard-format exports and presentable receipts brought app.js to ~1.02 MB without them.
      expect(text.length).toBeLessThan(1_200_000);
      expect(text).toContain('import("html2canvas")');
      expect(text).not.toMatch(/html2canvas \d+\.\d+\.\d+ <https:\/\/html2canvas/);
    }
  });

  it('loads from this origin only, with no policy violation and no script error', async () => {
    expect(watches.length).toBeGreaterThan(0);
    for (const watch of watches) {
      expect(watch.foreignRequests).toEqual([]);
      expect(watch.errors).toEqual([]);
    }
  });
});
