import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'puppeteer-core';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';
import {
  launchBrowser,
  screenshot,
  watchPage,
  type BrowserSession,
  type PageWatch,
} from '../support/browser.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/** GET /api/v1/docs in headless Chromium: the whole reference, from this origin only. */
describe('API reference page in a browser', () => {
  let stack: TestStack;
  let session: BrowserSession;
  let page: Page;
  let watch: PageWatch;

  beforeAll(async () => {
    stack = await startTestStack();
    session = await launchBrowser();
    page = await session.browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    watch = await watchPage(page, new URL(stack.url).origin);
    await page.goto(`${stack.url}/api/v1/docs`, { waitUntil: 'networkidle0' });
    await page.waitForSelector('[data-section-id^="operation/"]', { timeout: 30_000 });
  }, 90_000);

  afterAll(async () => {
    await session?.close();
    await stack?.close();
  });

  it('lists every operation of the document, and each route is one of them', async () => {
    const rendered = await page.$$eval('[data-section-id^="operation/"]', (sections) =>
      sections.map((section) => section.getAttribute('data-section-id')?.split('/').pop()),
    );
    const openApi = buildOpenApiDocument(routes);
    const operationIds = Object.values(openApi.paths ?? {}).flatMap((item) =>
      Object.values(item as Record<string, { operationId: string }>).map(
        (operation) => operation.operationId,
      ),
    );
    expect(operationIds).toHaveLength(routes.length);
    expect([...new Set(rendered)].sort()).toEqual([...operationIds].sort());
    // The page shows them, not just their anchors: each summary is in the sidebar.
    const text = String(await page.evaluate('document.body.innerText'));
    for (const route of routes) expect(text).toContain(route.docs.summary);
    await screenshot(page, 'api-docs');
  });

  it('loads with no policy violation, no request to another origin and no script error', async () => {
    expect(await watch.cspViolations()).toEqual([]);
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.errors).toEqual([]);
  });

  it("styles by the response's nonce, which changes on every response, and never 'unsafe-inline'", async () => {
    const nonces = await Promise.all(
      [1, 2].map(async () => {
        const reply = await stack.request('GET', '/api/v1/docs');
        const policy = reply.headers.get('content-security-policy') ?? '';
        expect(policy).not.toContain('unsafe');
        expect(policy).toMatch(/(^|; )default-src 'none'/);
        expect(policy).toMatch(/(^|; )script-src 'self'(;|$)/);
        const nonce = /style-src 'self' 'nonce-([A-Za-z0-9+/=]+)'/.exec(policy)?.[1];
        expect(nonce).toBeDefined();
        expect(reply.text).toContain(`nonce="${nonce}"`);
        return nonce;
      }),
    );
    expect(nonces[0]).not.toBe(nonces[1]);
    // Redoc's styles were inserted under this page's nonce, not allowed some other way.
    const styleNonces = await page.$$eval('style', (styles) => styles.map((style) => style.nonce));
    expect(styleNonces.length).toBeGreaterThan(0);
    const pageNonce = await page.$eval('#redoc', (element) => element.getAttribute('data-nonce'));
    expect(new Set(styleNonces)).toEqual(new Set([pageNonce]));
  });

  it('serves its scripts itself and refuses any other asset name', async () => {
    const redoc = await stack.request('GET', '/api/v1/docs?asset=redoc.standalone.js');
    expect(redoc.status).toBe(200);
    expect(redoc.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(redoc.text).not.toContain('cdn.redoc.ly');
    const other = await stack.request('GET', '/api/v1/docs?asset=..%2Fpackage.json');
    expect(other.status).toBe(400);
    expect(other.json).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST' } });
  });
});
