import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { sealEnvelope } from '../../lib/crypto/envelope.js';
import { flattenedReceipt, gatewayFields, newHashedPan } from '../support/fixtures.js';
import { sealLegacyEnvelope } from '../support/legacy-envelope.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { bound, receiptBytes, receiptJson, recipientKeys } from './support.js';

/**
 * The SDK as an app gets it: `npm pack` (its prepack builds it and puts receipt-core inside), the
 * tarball installed in a fresh project outside the repository, the SDK README's every TypeScript
 * block compiled there with `tsc --strict` (once without the DOM library, with @types/node 22, as a
 * Node backend; once with the DOM library and no Node types, as a browser app), and the installed
 * package run on Node 22: opening the server's envelopes of every layout, verifying a webhook, and the
 * README's device flow against a local stack. (The one test that builds the SDK: a second build of
 * packages/sdk/dist beside it would race this one.) The tarball's dependencies come from npm's cache (`--prefer-offline`);
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

/** The packages installed in the app's node_modules, scoped ones by their full name. */
async function installedPackages(): Promise<string[]> {
  const top = (await readdir(join(app, 'node_modules'))).filter((name) => !name.startsWith('.'));
  const scoped = await Promise.all(
    top.map(async (name) =>
      name.startsWith('@')
        ? (await readdir(join(app, 'node_modules', name))).map((inner) => `${name}/${inner}`)
        : [name],
    ),
  );
  return scoped.flat();
}

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
    const installed = await installedPackages();
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

/** Runs an ES module on Node 22 in the app, \`input\` on its stdin as JSON; returns what it prints as JSON. */
function runInApp(source: string, input: unknown): Promise<unknown> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(node22, ['--input-type=module', '-e', source], {
      cwd: app,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(JSON.parse(stdout));
      else reject(new Error(`node exited with ${code}: ${stderr}`));
    });
    child.stdin.end(JSON.stringify(input));
  });
}

const consumer = `
import { EnvelopeError, generateDeviceKey, importPrivateKey, openEnvelope, verifyWebhook, createClient } from '@receipt-service/sdk';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const input = JSON.parse(text);
const opened = [];
for (const { envelope, pkcs8 } of input.envelopes) {
  const { privateKey } = await importPrivateKey(pkcs8);
  opened.push(await openEnvelope(envelope, privateKey));
}
const tampered = { ...input.envelopes[0].envelope, receiptId: 'someone-else' };
const refusal = await openEnvelope(tampered, (await importPrivateKey(input.envelopes[0].pkcs8)).privateKey).catch((error) => error);
const device = await generateDeviceKey();
const event = verifyWebhook(input.webhook.payload, input.webhook.headers, input.webhook.secret);
console.log(JSON.stringify({
  opened,
  refusal: { isEnvelopeError: refusal instanceof EnvelopeError, message: refusal.message },
  device: { algorithm: device.algorithm, extractable: device.privateKey.extractable },
  event,
  client: typeof createClient({ baseUrl: 'http://127.0.0.1:1' }).POST,
}));
`;

describe('the installed SDK on Node 22', () => {
  it('has no Node module in its JavaScript, receipt-core included', async () => {
    for (const dir of [
      '@receipt-service/sdk/dist',
      '@receipt-service/sdk/node_modules/@receipt-service/receipt-core/dist',
    ]) {
      const base = join(app, 'node_modules', dir);
      const files = (await readdir(base, { recursive: true })).filter((name) => name.endsWith('.js'));
      expect(files.length).toBeGreaterThan(3);
      for (const file of files) {
        const source = await readFile(join(base, file), 'utf8');
        const imports = [...source.matchAll(/from ['"]([^'"]+)['"]/g)].map((match) => match[1]!);
        expect({
          file,
          nodeImports: imports.filter((name) => /^node:|^(crypto|fs|buffer)$/.test(name)),
        }).toEqual({
          file,
          nodeImports: [],
        });
      }
    }
  });

  it("presents receipts on Node 22 once the app installs the credential entry's optional peers (seven packages)", async () => {
    const before = await installedPackages();
    await npm(
      ['install', '--prefer-offline', '@sd-jwt/core@^0.19.0', '@sd-jwt/decode@^0.19.0', 'jose@^6.2.17'],
      app,
    );
    const added = (await installedPackages()).filter((name) => !before.includes(name)).sort();
    expect(added).toEqual([
      '@sd-jwt/core',
      '@sd-jwt/decode',
      '@sd-jwt/present',
      '@sd-jwt/types',
      '@sd-jwt/utils',
      'jose',
      'js-base64',
    ]);
    const result = await runInApp(
      `
import { generateSigningKey, toDigitalReceipt } from '@receipt-service/sdk';
import { issueReceiptCredential, presentReceipt, verifyReceiptPresentation } from '@receipt-service/sdk/credential';
const key = await generateSigningKey({ algorithm: 'ES256' });
const receipt = toDigitalReceipt({ receiptId: 'r-1', merchantId: 'm-1', merchantName: 'Corner Coffee',
  transactionId: 't-1', subtotal: 900, taxAmount: 78, totalAmount: 978 }, '2026-11-28T00:00:00Z');
const credential = await issueReceiptCredential(receipt, key.privateKey, key.kid,
  { issuer: 'https://receipts.example.com/api/v1/merchants/c-1/jwks.json' });
const jwks = { keys: [{ ...key.publicJwk, kid: key.kid, alg: 'ES256' }] };
const { claims } = await verifyReceiptPresentation(await presentReceipt(credential), jwks);
console.log(JSON.stringify({ seller: claims.Party.partyName_.name, total: claims.MonetaryTotal.payableAmount,
  lines: 'PurchaseReceiptLine' in claims }));
`,
      null,
    );
    expect(result).toEqual({ seller: 'Corner Coffee', total: 9.78, lines: false });
  }, 120_000);

  it('opens the server envelopes of every layout and verifies a webhook, by package name', async () => {
    const rsa = await recipientKeys('rsa');
    const p256 = await recipientKeys('p256');
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const payload = JSON.stringify({
      type: 'receipt.available',
      timestamp: new Date().toISOString(),
      data: bound,
    });
    const at = new Date();
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign('msg_1', at, payload),
    };
    const result = await runInApp(consumer, {
      envelopes: [
        { envelope: sealEnvelope(receiptBytes(), bound, rsa), pkcs8: rsa.pkcs8 },
        { envelope: sealEnvelope(receiptBytes(), bound, p256), pkcs8: p256.pkcs8 },
        { envelope: sealLegacyEnvelope(receiptBytes(), bound, rsa.publicKey, rsa.keyId), pkcs8: rsa.pkcs8 },
      ],
      webhook: { payload, headers, secret },
    });
    expect(result).toEqual({
      opened: [receiptJson, receiptJson, receiptJson],
      refusal: { isEnvelopeError: true, message: 'The receipt envelope could not be opened with this key.' },
      device: { algorithm: 'ECDH-ES+A256KW', extractable: false },
      event: JSON.parse(payload),
      client: 'function',
    });
  }, 60_000);
});

/*
 * The README's device-flow block as written, run on Node 22 against a local stack: its step 3 is a
 * comment (a merchant's till pays), so the run puts the till there: it registers the issuer's webhook
 * at a receiver in the same process, pays on gateway_b for the registered card, and waits for the
 * delivery that step 4 verifies. The block's base URL becomes the stack's, and its keys are real.
 */
const DEVICE_FLOW_GIVENS = `
const ISSUER_API_KEY = process.env.ISSUER_API_KEY!;
const MERCHANT_API_KEY = process.env.MERCHANT_API_KEY!;
const hashedPan = process.env.HASHED_PAN!;
let rawRequestBody = '';
let request = { headers: {} as Record<string, string> };
let webhookSecret = '';
`;

const TILL_PAYS = `
import { createServer } from 'node:http';
const receiver = createServer();
await new Promise<void>((listening) => receiver.listen(0, '127.0.0.1', listening));
const delivered = new Promise<{ body: string; headers: Record<string, string> }>((arrived) =>
  receiver.on('request', (incoming, answer) => {
    let body = '';
    incoming.on('data', (chunk) => (body += chunk));
    incoming.on('end', () => {
      answer.writeHead(204).end();
      arrived({ body, headers: incoming.headers as Record<string, string> });
    });
  }),
);
const { port } = receiver.address() as { port: number };
const hook = await service.POST('/api/v1/webhooks', {
  body: { url: \`http://127.0.0.1:\${port}/receipts\`, events: ['receipt.available'] },
});
webhookSecret = hook.data!.data.secret;
const paid = await createClient({ baseUrl: process.env.BASE_URL!, apiKey: MERCHANT_API_KEY }).POST(
  '/api/v1/payments/{gateway}/create',
  { params: { path: { gateway: 'gateway_b' } }, body: JSON.parse(process.env.PAYMENT_BODY!) },
);
if (!paid.data) throw new Error(JSON.stringify(paid.error));
const delivery = await delivered;
receiver.close();
rawRequestBody = delivery.body;
request = { headers: delivery.headers };
`;

describe("the README's device flow, installed from the tarball, on Node 22", () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack();
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
  });

  it('registers a device key, is told of the paid receipt by webhook, fetches it and opens it on the device', async () => {
    const readme = await readFile(join(sdk, 'README.md'), 'utf8');
    const block = (await readmeBlocks()).find((text) => text.includes('generateDeviceKey()'));
    expect(block).toBeDefined();
    expect(readme).toContain(block!.replace('\nexport {};\n', ''));
    const [beforeTill, rest] = block!.split(/^\/\/ 3\. /m) as [string, string];
    const afterTill = rest.slice(rest.search(/^\/\/ 4\. /m));
    const script = [
      DEVICE_FLOW_GIVENS,
      beforeTill.replaceAll("'https://receipts.example.com'", 'process.env.BASE_URL!'),
      TILL_PAYS,
      afterTill,
      'console.log(JSON.stringify({ receiptId: receipt.receiptId, merchant: receipt.merchant.name, event: event.type }));',
    ].join('\n');
    await writeFile(join(app, 'device-flow.ts'), script);

    const hashedPan = newHashedPan();
    const body = flattenedReceipt({ recipientHashedPan: hashedPan });
    const { stdout } = await run(node22, ['device-flow.ts'], {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        BASE_URL: stack.url,
        ISSUER_API_KEY: (await stack.apiKey(['issuer'])).apiKey,
        MERCHANT_API_KEY: (await stack.apiKey(['merchant'])).apiKey,
        HASHED_PAN: hashedPan,
        PAYMENT_BODY: JSON.stringify({ ...body, ...gatewayFields('gateway_b', body) }),
      },
    });
    expect(JSON.parse(stdout)).toEqual({
      receiptId: body.receiptId,
      merchant: body.merchantName,
      event: 'receipt.available',
    });
  }, 120_000);
});
