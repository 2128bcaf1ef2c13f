import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { flattenedDecrypt, type FlattenedJWE } from 'jose';
import {
  openEnvelope as serverOpenEnvelope,
  sealEnvelope,
  toFlattenedJwe,
  type BoundFields,
  type SealedEnvelope,
} from '../lib/crypto/envelope.js';
import { importPrivateKey, openEnvelopeBytes } from '@receipt-service/sdk';
import type { WebCryptoKey } from '@receipt-service/receipt-core';
import { benchReceipt } from './lib/receipt.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { median, rotated, round } from './lib/stats.js';

/**
 * The SDK's openEnvelope (WebCrypto, as on a device; here Node's WebCrypto) for a P-256 and an
 * RSA-2048 recipient, against jose's flattenedDecrypt of the same envelopes (also WebCrypto) and the
 * server's node:crypto openEnvelope. Candidates run interleaved in rotating order within each round
 * and every ratio is taken within a round before the median, as in the crypto section.
 */

export interface SdkBenchOptions {
  rounds: number;
  sliceMs: number;
}

type Algorithm = 'P-256' | 'RSA';
interface Candidate {
  name: string;
  run: () => Promise<number> | number;
}

interface Opener {
  envelope: SealedEnvelope;
  jwe: FlattenedJWE;
  privateKey: KeyObject;
  webCryptoKey: WebCryptoKey;
}

async function opener(type: 'rsa' | 'ec', plaintext: Buffer, bound: BoundFields): Promise<Opener> {
  const pair =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 })
      : generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const envelope = sealEnvelope(plaintext, bound, { keyId: `bench-${type}`, publicKey: pair.publicKey });
  const pkcs8 = pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
  return {
    envelope,
    jwe: toFlattenedJwe(envelope) as FlattenedJWE,
    privateKey: pair.privateKey,
    webCryptoKey: (await importPrivateKey(pkcs8)).privateKey,
  };
}

async function slice(candidate: Candidate, sliceMs: number): Promise<number> {
  let operations = 0;
  let sink = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < sliceMs) {
    sink += await candidate.run();
    operations++;
    elapsed = performance.now() - start;
  }
  if (sink < 0) console.log('unreachable', sink);
  return (operations / elapsed) * 1000;
}

export async function runSdkBench(options: SdkBenchOptions): Promise<{
  receiptBytes: number;
  opsPerSecond: Record<string, number>;
  ratios: Record<string, number>;
  targets: TargetCheck[];
}> {
  const receipt = benchReceipt();
  const plaintext = Buffer.from(JSON.stringify(receipt), 'utf8');
  const bound: BoundFields = {
    version: receipt.version,
    receiptId: receipt.receiptId,
    merchantId: receipt.merchant.merchantId,
    transactionId: receipt.transaction.transactionId,
  };
  const openers: Record<Algorithm, Opener> = {
    'P-256': await opener('ec', plaintext, bound),
    RSA: await opener('rsa', plaintext, bound),
  };

  const candidates: Candidate[] = (['P-256', 'RSA'] as const).flatMap((algorithm) => {
    const { envelope, jwe, privateKey, webCryptoKey } = openers[algorithm];
    return [
      {
        name: `${algorithm} open: SDK`,
        run: async () => (await openEnvelopeBytes(envelope, webCryptoKey)).length,
      },
      {
        name: `${algorithm} open: jose`,
        run: async () => (await flattenedDecrypt(jwe, webCryptoKey)).plaintext.length,
      },
      { name: `${algorithm} open: server`, run: () => serverOpenEnvelope(envelope, privateKey).length },
    ];
  });
  // Every candidate must produce the receipt before anything is timed.
  for (const { name } of candidates) {
    const [algorithm] = name.split(' ') as [Algorithm];
    const { envelope, jwe, privateKey, webCryptoKey } = openers[algorithm];
    const outputs = [
      await openEnvelopeBytes(envelope, webCryptoKey),
      (await flattenedDecrypt(jwe, webCryptoKey)).plaintext,
      serverOpenEnvelope(envelope, privateKey),
    ];
    if (!outputs.every((output) => Buffer.from(output).equals(plaintext)))
      throw new Error(`sdk bench: ${name} did not round-trip`);
  }

  for (const candidate of candidates) await slice(candidate, 100);
  const perRound = new Map<string, number[]>(candidates.map((candidate) => [candidate.name, []]));
  for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
    for (const candidate of rotated(candidates, roundIndex)) {
      perRound.get(candidate.name)?.push(await slice(candidate, options.sliceMs));
    }
  }
  const series = (name: string): number[] => perRound.get(name) ?? [];
  /** Median over rounds of a ÷ b throughput, taken within each round. */
  const ratio = (a: string, b: string): number =>
    round(median(series(a).map((value, index) => value / (series(b)[index] ?? Number.NaN))), 3);

  const opsPerSecond: Record<string, number> = {};
  for (const { name } of candidates) opsPerSecond[name] = round(median(series(name)), 1);
  const ratios: Record<string, number> = {
    'P-256 SDK ÷ jose': ratio('P-256 open: SDK', 'P-256 open: jose'),
    'RSA SDK ÷ jose': ratio('RSA open: SDK', 'RSA open: jose'),
    'SDK P-256 ÷ SDK RSA': ratio('P-256 open: SDK', 'RSA open: SDK'),
    'P-256 SDK ÷ server': ratio('P-256 open: SDK', 'P-256 open: server'),
    'RSA SDK ÷ server': ratio('RSA open: SDK', 'RSA open: server'),
  };

  printTable(
    `SDK openEnvelope (WebCrypto in Node): ${plaintext.length}-byte receipt; ${options.rounds} rounds of ${options.sliceMs} ms slices, medians`,
    ['candidate', 'ops/s', 'µs/op'],
    candidates.map(({ name }) => [
      name,
      opsPerSecond[name] ?? Number.NaN,
      round(1e6 / (opsPerSecond[name] ?? Number.NaN), 1),
    ]),
  );
  printTable(
    'SDK throughput ratios (above 1: the first is faster)',
    ['ratio', 'median'],
    Object.entries(ratios).map(([name, value]) => [name, value]),
  );
  const targets: TargetCheck[] = [
    {
      section: 'sdk',
      target: 'SDK open vs jose flattenedDecrypt, P-256 and RSA-2048',
      measured: `P-256 ${ratios['P-256 SDK ÷ jose']}×, RSA ${ratios['RSA SDK ÷ jose']}× jose's throughput`,
      met: null,
      informational: true,
    },
    {
      section: 'sdk',
      target: 'SDK open, P-256 vs RSA-2048',
      measured: `P-256 at ${ratios['SDK P-256 ÷ SDK RSA']}× RSA's throughput`,
      met: null,
      informational: true,
    },
  ];
  return { receiptBytes: plaintext.length, opsPerSecond, ratios, targets };
}
