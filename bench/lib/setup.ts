import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flattenedReceipt, newHashedPan } from '../../test/support/fixtures.js';
import {
  RECEIPT_ID_PLACEHOLDER,
  TRANSACTION_ID_PLACEHOLDER,
  type LoadOutcome,
  type LoadSpec,
} from './load-spec.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { benchReceipt } from './receipt.js';

/** What the HTTP sections share: a setup client (not timed), request bodies and the load generator. */

export type Json = Record<string, unknown>;

export interface User {
  userId: string;
  keyId: string;
  publicKey: string;
  privateKey: string;
  hashedPan: string;
}

export const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null;

export function text(record: Json, key: string): string {
  const value = record[key];
  if (typeof value !== 'string')
    throw new Error(`expected a string ${key} in ${JSON.stringify(record).slice(0, 200)}`);
  return value;
}

/** POST for setup and warm-up: anything but a 2xx with `data` stops the bench with the answer. */
export const post = (baseUrl: string, path: string, apiKey: string, body?: unknown): Promise<Json> =>
  call('POST', baseUrl, path, apiKey, body);

/** GET for the checks of the floors' work, as `post`. */
export const get = (baseUrl: string, path: string, apiKey: string): Promise<Json> =>
  call('GET', baseUrl, path, apiKey);

async function call(
  method: 'GET' | 'POST',
  baseUrl: string,
  path: string,
  apiKey: string,
  body?: unknown,
): Promise<Json> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const parsed: unknown = await response.json();
  if (!response.ok || !isRecord(parsed) || !isRecord(parsed.data)) {
    throw new Error(
      `setup: ${method} ${baseUrl}${path} answered ${response.status}: ${JSON.stringify(parsed).slice(0, 300)}`,
    );
  }
  return parsed.data;
}

/** A registered user through the API (generate-keys, then register with a fresh hashedPan). */
export async function onboardUser(baseUrl: string, issuerKey: string): Promise<User> {
  const pair = await post(baseUrl, '/api/v1/onboarding/generate-keys', issuerKey);
  const hashedPan = newHashedPan();
  const registered = await post(baseUrl, '/api/v1/onboarding/register', issuerKey, {
    hashedPan,
    publicKey: text(pair, 'publicKey'),
    keyId: text(pair, 'keyId'),
  });
  return {
    userId: text(registered, 'userId'),
    keyId: text(pair, 'keyId'),
    publicKey: text(pair, 'publicKey'),
    privateKey: text(pair, 'privateKey'),
    hashedPan,
  };
}

/** Runs `task` over `items` with at most `limit` in flight. */
export async function inPool<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// Placeholders become fresh UUIDs per request in the load generator.

/**
 * One merchantId per merchant key, as a point of sale sends: a merchantId belongs to the first client
 * that names it, and the service remembers that after the first request rather than writing it again.
 */
const encryptMerchantId = randomUUID();
const paymentMerchantId = randomUUID();

/** receipts/encrypt, nested form, to a card's hashedPan (a registered user's, or one escrowed for). */
export function encryptBody(card: Pick<User, 'hashedPan'>, overrides: Partial<DigitalReceipt> = {}): unknown {
  const receipt = benchReceipt(overrides);
  return {
    receipt: {
      ...receipt,
      merchant: { ...receipt.merchant, merchantId: encryptMerchantId },
      receiptId: RECEIPT_ID_PLACEHOLDER,
      transaction: { ...receipt.transaction, transactionId: TRANSACTION_ID_PLACEHOLDER },
    },
    recipientIdentifier: { type: 'email', value: 'cardholder@example.com' },
    recipientHashedPan: card.hashedPan,
  };
}

/** payments/{gateway}/create: the flattened receipt plus the amount charged. */
export function paymentBody(user: User): unknown {
  const receipt = flattenedReceipt({
    receiptId: RECEIPT_ID_PLACEHOLDER,
    transactionId: TRANSACTION_ID_PLACEHOLDER,
    recipientHashedPan: user.hashedPan,
    merchantId: paymentMerchantId,
  });
  return { ...receipt, amount: receipt.totalAmount };
}

export const withIds = (template: unknown): unknown =>
  JSON.parse(
    JSON.stringify(template)
      .replaceAll(RECEIPT_ID_PLACEHOLDER, randomUUID())
      .replaceAll(TRANSACTION_ID_PLACEHOLDER, randomUUID()),
  );

const loadScript = fileURLToPath(new URL('../http-load.ts', import.meta.url));

/** Starts the load generator (tsx, same Node binary) and waits for it, killing it if it overruns. */
export async function runLoad(spec: LoadSpec, workDir: string): Promise<LoadOutcome> {
  const id = randomUUID();
  const specPath = join(workDir, `${id}.spec.json`);
  const outcomePath = join(workDir, `${id}.outcome.json`);
  await writeFile(specPath, JSON.stringify(spec));
  const child = spawn(process.execPath, ['--import', 'tsx', loadScript, specPath, outcomePath], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const limitMs = (spec.durationSec + 60) * 1000;
  const killer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(killer);
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(await readFile(outcomePath, 'utf8')) as LoadOutcome;
}
