import { execFile, spawn } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { sealEnvelope } from '../../lib/crypto/envelope.js';
import { sealLegacyEnvelope } from '../support/legacy-envelope.js';
import { bound, receiptBytes, receiptJson, recipientKeys } from './support.js';

/**
 * The SDK as a consumer gets it: built by its own tsconfig (DOM library, no Node types) into
 * packages/sdk/dist, receipt-core into its own dist, and imported by package name from a plain Node process, where it opens envelopes
 * the server sealed and verifies a signed webhook.
 */

const root = resolve(import.meta.dirname, '..', '..');
const sdk = join(root, 'packages', 'sdk');
const run = promisify(execFile);

/** Runs an ES module in a fresh Node, `input` on its stdin as JSON; returns what it prints as JSON. */
function runModule(source: string, input: unknown): Promise<unknown> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
      cwd: root,
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

describe('the built SDK', () => {
  beforeAll(async () => {
    await rm(join(sdk, 'dist'), { recursive: true, force: true });
    // The SDK's `npm run build`: receipt-core's dist first, which the SDK's imports by name.
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    for (const config of ['packages/receipt-core/tsconfig.build.json', 'packages/sdk/tsconfig.build.json']) {
      await run(process.execPath, [tsc, '-p', join(root, config)], { cwd: root });
    }
  });

  it('builds to dist with declarations, and no Node module in its JavaScript', async () => {
    const files = await readdir(join(sdk, 'dist'), { recursive: true });
    expect(files).toEqual(
      expect.arrayContaining(['index.js', 'index.d.ts', 'envelope.js', 'generated/api.d.ts']),
    );
    for (const file of files.filter((name) => name.endsWith('.js'))) {
      const source = await readFile(join(sdk, 'dist', file), 'utf8');
      const imports = [...source.matchAll(/from ['"]([^'"]+)['"]/g)].map((match) => match[1]);
      expect({
        file,
        nodeImports: imports.filter((name) => /^node:|^(crypto|fs|buffer)$/.test(name!)),
      }).toEqual({
        file,
        nodeImports: [],
      });
    }
  });

  it('runs in plain Node by package name: opens the server envelopes of every layout and verifies a webhook', async () => {
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
    const result = await runModule(consumer, {
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
  });
});
