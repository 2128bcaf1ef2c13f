import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'puppeteer-core';
import { nodeImport } from './node-import.js';

/**
 * Headless Chromium for the browser tests (*.slow.test.ts): Debian's package, found by path (no
 * browser download), driven over the DevTools protocol by puppeteer-core. `.ci/run` installs
 * chromium-headless-shell when neither binary is present.
 */
const debianPaths = [
  '/usr/bin/chromium-headless-shell',
  '/usr/lib/chromium/chromium-headless-shell',
  '/usr/bin/chromium',
  '/usr/lib/chromium/chromium',
];

export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`CHROMIUM_PATH=${fromEnv} does not exist`);
    return fromEnv;
  }
  const found = debianPaths.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      'No Chromium found: `apt-get install chromium-headless-shell` (what .ci/run does), or set CHROMIUM_PATH',
    );
  }
  return found;
}

/** Screenshots land here; the folder is git-ignored and kept as the run's artefacts. */
export const artifactsDir = resolve(fileURLToPath(new URL('../..', import.meta.url)), 'test-artifacts');

export interface BrowserSession {
  browser: Browser;
  /** Closes the browser (its whole process group) and removes its profile; safe to call twice. */
  close(): Promise<void>;
}

/**
 * A browser with a fresh profile in its own temp folder, so no test sees another's storage. Call
 * `close` in afterAll: puppeteer also kills the browser's process group if the test process exits.
 */
export async function launchBrowser(): Promise<BrowserSession> {
  const executablePath = chromiumPath();
  const profile = await mkdtemp(join(tmpdir(), 'receipt-browser-'));
  const { default: puppeteer } = await nodeImport<typeof import('puppeteer-core')>('puppeteer-core');
  const browser = await puppeteer.launch({
    executablePath,
    // The headless shell is the old headless mode; the full browser runs the new one.
    headless: executablePath.includes('headless-shell') ? 'shell' : true,
    userDataDir: profile,
    // DevTools over a pipe: no debugging port is opened.
    pipe: true,
    // Tests run as root in CI containers, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--no-first-run', '--disable-gpu'],
  });
  let closed = false;
  return {
    browser,
    async close() {
      if (closed) return;
      closed = true;
      await browser.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export interface PageWatch {
  /** Every Content-Security-Policy violation the page reported (directive and blocked URL). */
  cspViolations(): Promise<string[]>;
  /** Requests to any origin other than the page's own: aborted, and listed here. */
  foreignRequests: string[];
  /** Uncaught exceptions and console errors. */
  errors: string[];
}

/**
 * Records CSP violations (the page's own securitypolicyviolation events), and aborts and records
 * every request that leaves `origin`, so a test can assert the page needs nothing from elsewhere.
 * Call before the first navigation.
 */
export async function watchPage(page: Page, origin: string): Promise<PageWatch> {
  const foreignRequests: string[] = [];
  const errors: string[] = [];
  // Page-side code as text: the project compiles without the DOM library.
  await page.evaluateOnNewDocument(`
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      window.__cspViolations.push(
        event.violatedDirective + ' blocked ' + (event.blockedURI || '(inline)') + ' ' + event.sample);
    });
  `);
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    const url = request.url();
    // data: and blob: URLs never leave the page; CSP decides whether they may be used.
    if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) {
      void request.continue();
      return;
    }
    foreignRequests.push(url);
    void request.abort('blockedbyclient');
  });
  page.on('pageerror', (error) => errors.push(`page error: ${String(error)}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  return {
    foreignRequests,
    errors,
    cspViolations: async () => (await page.evaluate('[...(window.__cspViolations ?? [])]')) as string[],
  };
}

/** A PNG of the viewport (or the whole page) in test-artifacts/; returns its path. */
export async function screenshot(page: Page, name: string, { fullPage = false } = {}): Promise<string> {
  await mkdir(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}
