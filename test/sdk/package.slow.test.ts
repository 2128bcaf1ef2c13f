import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

/**
 * The SDK as an app gets it: `npm pack` (its prepack builds it and puts receipt-core inside), the
 * tarball installed in a fresh project outside the repository, the SDK README's every TypeScript
 * block compiled there with `tsc --strict` (once without the DOM library, with @types/node 22, as a
 * Node backend; once with the DOM library and no Node types, as a browser app), and the installed
 * package run on Node 22. The tarball's dependencies come from npm's cache (`--prefer-offline`);
 * Node 22 and @types/node 22 are the SDK workspace's devDependencies, tsc the repository's.
 */
const root = resolve(import.meta.dirname, '..', '..');
const sdk = join(root, 'packages', 'sdk');
const node22 = join(sdk, 'node_modules', 'node', 'bin', 'node');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const run = promisify(execFile);
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env: { ...process.env, npm_config_update_notifier: 'false' },
    maxBuffer: 16 * 1024 * 1024,
  });

/** The README's ```ts blocks, each a module of its own. */
async function readmeBlocks(): Promise<string[]> {
  const readme = await readFile(join(sdk, 'README.md'), 'utf8');
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => `${match[1]}\nexport {};\n`);
}

/**
 * What the README's blocks take as given: the reader's own values (keys, ids, the card's hash, the
 * request a webhook came in) and what an earlier section made (`till`, `paymentBody`, `device`).
 */
const README_GIVENS = `
type Sdk = typeof import('@receipt-service/sdk');
declare const MERCHANT_API_KEY: string;
declare const ISSUER_API_KEY: string;
declare const cardNumber: string;
declare const hashedPan: string;
declare const orderId: string;
declare const receiptId: string;
declare const merchantId: string;
declare const transactionId: string;
declare const lineItemId: string;
declare const userId: string;
declare const till: import('@receipt-service/sdk').ReceiptServiceClient;
declare const bank: import('@receipt-service/sdk').ReceiptServiceClient;
declare const paymentBody: import('@receipt-service/sdk').components['schemas']['CreatePaymentRequest'];
declare const receipt: import('@receipt-service/sdk').Receipt;
declare const envelope: import('@receipt-service/sdk').Envelope;
declare const device: Awaited<ReturnType<Sdk['generateDeviceKey']>>;
declare const rawRequestBody: string;
declare const request: { headers: Record<string, string> };
declare const webhookSecret: string;
declare const statementLines: { id: string; amountMinor: number; currency: string; authorisedAt: string; cardLast4?: string }[];
declare const frame: { srcdoc: string };
declare function showUnverified(message: string): void;
declare const baseUrl: string;
declare const apiKey: string;
declare const clock: import('@receipt-service/sdk').RetryClock;
`;

let work: string;
let app: string;
let tarball: string;
let packed: string[];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sdk-package-'));
  const { stdout } = await npm(['pack', '--json', '--pack-destination', work], sdk);
  const [result] = JSON.parse(stdout.slice(stdout.indexOf('['))) as {
    filename: string;
    files: { path: string }[];
  }[];
  tarball = join(work, result!.filename);
  packed = result!.files.map((file) => file.path);
  app = join(work, 'app');
  await mkdir(app);
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }),
  );
  await npm(['install', '--prefer-offline', tarball], app);
}, 300_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** tsc --strict over the README's blocks in the app project, with the given libraries and types. */
async function compileReadme(name: string, options: Record<string, unknown>): Promise<string> {
  const dir = join(app, name);
  await mkdir(dir);
  const blocks = await readmeBlocks();
  const files = blocks.map((_, index) => `block-${index + 1}.ts`);
  await Promise.all([
    ...blocks.map((block, index) => writeFile(join(dir, files[index]!), block)),
    writeFile(join(dir, 'givens.d.ts'), README_GIVENS),
    writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          // The SDK's declarations are checked too: a name they use that the project lacks fails here.
          skipLibCheck: false,
          ...options,
        },
        files: ['givens.d.ts', ...files],
      }),
    ),
  ]);
  const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir }).then(
    ({ stdout }) => stdout,
    (error: { stdout?: string }) => `tsc failed:\n${error.stdout ?? String(error)}`,
  );
  return result.trim();
}

describe('the packed SDK', () => {
  it('carries its build and receipt-core, and no sources', () => {
    expect(packed).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/pdf.js',
        'dist/pdf.d.ts',
        'node_modules/@receipt-service/receipt-core/package.json',
        'node_modules/@receipt-service/receipt-core/dist/index.js',
        'node_modules/@receipt-service/receipt-core/dist/index.d.ts',
      ]),
    );
    expect(packed.filter((path) => path.startsWith('src/') || path.includes('/src/'))).toEqual([]);
  });

  it('installs alone and small: no jsPDF unless the app asks for PDFs', async () => {
    const top = (await readdir(join(app, 'node_modules'))).filter((name) => !name.startsWith('.'));
    const scoped = await Promise.all(
      top.map(async (name) =>
        name.startsWith('@')
          ? (await readdir(join(app, 'node_modules', name))).map((inner) => `${name}/${inner}`)
          : [name],
      ),
    );
    const installed = scoped.flat();
    expect(installed).toEqual(
      expect.arrayContaining(['@receipt-service/sdk', 'openapi-fetch', 'canonicalize']),
    );
    expect(installed.some((path) => path.includes('jspdf'))).toBe(false);
    expect(installed.length).toBeLessThan(12);
  });

  it("compiles the README's examples with tsc --strict in a Node project without the DOM library (@types/node 22)", async () => {
    const types = join(sdk, 'node_modules', '@types');
    const nodeTypes = JSON.parse(await readFile(join(types, 'node', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(nodeTypes.version).toMatch(/^22\./);
    expect(await compileReadme('node-only', { lib: ['ES2022'], types: ['node'], typeRoots: [types] })).toBe(
      '',
    );
  }, 120_000);

  it("compiles the README's examples with tsc --strict in a browser project (DOM library, no Node types)", async () => {
    // standardwebhooks' own declarations name Node's Buffer: a browser project skips library checks, as
    // the usual templates (Vite's, Next's) do. The SDK's declarations are held to account above.
    expect(
      await compileReadme('browser', {
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        types: [],
        skipLibCheck: true,
      }),
    ).toBe('');
  }, 120_000);

  it('runs on Node 22 by package name: a device key, the receipt mapping, and the PDF entry point without jsPDF', async () => {
    await writeFile(
      join(app, 'smoke.mjs'),
      `
import { canonicalJson, generateDeviceKey, toDigitalReceipt, createClient } from '@receipt-service/sdk';
const device = await generateDeviceKey();
const receipt = toDigitalReceipt({ receiptId: 'r-1', merchantId: 'm-1', merchantName: 'Corner Coffee',
  transactionId: 't-1', subtotal: 900, taxAmount: 78, totalAmount: 978 }, '2026-11-28T00:00:00Z');
const pdf = await import('@receipt-service/sdk/pdf');
const missing = await pdf.renderReceiptPdf(receipt).then(() => 'made', (error) => error.code ?? error.message);
console.log(JSON.stringify({ node: process.versions.node.split('.')[0], algorithm: device.algorithm,
  receipt: receipt.receiptId, canonical: canonicalJson({ b: 1, a: 2 }), client: typeof createClient,
  pdf: typeof pdf.renderReceiptPdf, missing }));
`,
    );
    const { stdout } = await run(node22, ['smoke.mjs'], { cwd: app });
    expect(JSON.parse(stdout)).toEqual({
      node: '22',
      algorithm: 'ECDH-ES+A256KW',
      receipt: 'r-1',
      canonical: '{"a":2,"b":1}',
      client: 'function',
      pdf: 'function',
      missing: 'ERR_MODULE_NOT_FOUND',
    });
  }, 60_000);
});
