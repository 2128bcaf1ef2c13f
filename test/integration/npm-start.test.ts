import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CardTagKeyring } from '../../lib/crypto/card-tag.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { EvidenceRepository } from '../../lib/db/evidence.js';
import { claimFactsOf } from '../../lib/receipts/encrypt.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { LocalCardTagKeyFile } from '../../local/card-tag-key.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import {
  answersHttp,
  patience,
  pollUntil,
  startProcessGroup,
  stopAllProcessGroups,
  type ProcessGroup,
} from '../support/processes.js';

/**
 * `npm start` as a developer runs it. On a loaded machine (CI with another test run beside it) a
 * start takes many times what it takes on an idle one, so every wait here is a deadline scaled by
 * the load, the port is the OS's choice (PORT=0, read back from what the service prints), and every
 * process group a test starts is stopped after it, passed or failed.
 */

const run = promisify(execFile);
// The jest worker's flags (--experimental-vm-modules) are not the service's.
const childEnv = (dataDir: string, extra: Record<string, string> = {}) => ({
  ...process.env,
  LOCAL_DATA_DIR: dataDir,
  NODE_OPTIONS: '',
  ...extra,
});

interface RunningService {
  group: ProcessGroup;
  url: string;
}

async function startService(dataDir: string): Promise<RunningService> {
  const group = startProcessGroup('npm', ['start'], { env: childEnv(dataDir, { PORT: '0' }) });
  const printed = await group.waitForOutput(/Receipt service listening on (http:\/\/\S+)/, patience(90_000));
  const url = printed[1] ?? '';
  // Ready once health says 200: right after the start, or on a loaded machine, its DynamoDB probe may
  // still time out and answer 503 for a while.
  let last = 'no answer';
  await pollUntil(
    `health of ${url}`,
    async () => {
      const health = await fetch(`${url}/api/v1/health`, {
        signal: AbortSignal.timeout(patience(10_000)),
      }).catch((error: unknown) => {
        last = String(error);
        return undefined;
      });
      if (health) last = `${health.status} ${await health.text()}`;
      return health?.status === 200 ? true : undefined;
    },
    {
      timeoutMs: patience(60_000),
      // Health counts against the anonymous limit (60 a minute by default): at most one a second.
      intervalMs: 1_000,
      abort: () => (group.exitStatus() ? `npm start ${group.exitStatus()}:\n${group.output()}` : undefined),
    },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; last answer: ${last}`);
  });
  return { group, url };
}

/** Ctrl-C: SIGINT to the whole process group, then wait until every process of it has ended. */
async function interrupt(service: RunningService): Promise<void> {
  service.group.signal('SIGINT');
  await service.group.gone(patience(30_000));
}

const admin = async (dataDir: string, ...args: string[]) =>
  (
    await run('npm', ['run', '-s', 'admin', '--', 'api-keys', ...args], {
      env: childEnv(dataDir),
      timeout: patience(60_000),
    })
  ).stdout;

const escrowKeyOf = (output: string) => /escrow key: (\S+)/.exec(output)?.[1];

/** Any admin command against the local stack of `dataDir`, its --json output parsed. */
const adminJson = async <T>(dataDir: string, ...args: string[]): Promise<T> =>
  JSON.parse(
    (
      await run('npm', ['run', '-s', 'admin', '--', ...args, '--json'], {
        env: childEnv(dataDir),
        timeout: patience(60_000),
      })
    ).stdout,
  ) as T;

/** The running local stack's tables, through a client of its own that is closed afterwards. */
async function withTables<T>(
  dataDir: string,
  use: (doc: DynamoDBDocumentClient, prefix: string) => Promise<T>,
): Promise<T> {
  const state = JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8')) as {
    dynamoDbEndpoint: string;
    tablePrefix: string;
  };
  const { doc, client } = createDynamoClients({ region: 'us-east-1', endpoint: state.dynamoDbEndpoint });
  try {
    return await use(doc, state.tablePrefix);
  } finally {
    client.destroy();
  }
}

const storedReceipt = (dataDir: string, receiptId: string) =>
  withTables(dataDir, async (doc, prefix) => {
    const { Items = [] } = await doc.send(
      new ScanCommand({
        TableName: `${prefix}receipts`,
        FilterExpression: 'receiptId = :id',
        ExpressionAttributeValues: { ':id': receiptId },
      }),
    );
    return Items[0];
  });

/**
 * An escrowed receipt turned back into what the version before the evidence index stored: its card's
 * tag, time and sealed facts on the receipt, and no evidence entries.
 */
async function asStoredBeforeTheIndex(dataDir: string, receipt: DigitalReceipt, hashedPan: string) {
  const item = await storedReceipt(dataDir, receipt.receiptId);
  const keyring = new CardTagKeyring(await (await LocalCardTagKeyFile.loadOrCreate(dataDir)).load());
  await withTables(dataDir, async (doc, prefix) => {
    const evidence = new EvidenceRepository(doc, `${prefix}evidence`);
    const key = { merchantClientId: String(item!.merchantClientId), receiptId: receipt.receiptId };
    await evidence.deleteAll(await evidence.keysOfReceipt(key));
    const tag = keyring.tagOf(hashedPan);
    await doc.send(
      new UpdateCommand({
        TableName: `${prefix}receipts`,
        Key: key,
        UpdateExpression: 'SET pendingRecipient = :tag, claimAt = :at, claimFacts = :facts',
        ExpressionAttributeValues: {
          ':tag': tag,
          ':at': claimFactsOf(receipt).at,
          ':facts': keyring.sealFacts(tag, claimFactsOf(receipt)),
        },
      }),
    );
  });
}

describe('npm start', () => {
  const dataDirs: string[] = [];
  /**
   * The first test's data folder, left as its Ctrl-C left it (a key created, moved to enterprise and
   * revoked; the escrow key made on first start): the second test starts again on it, so the restart
   * is checked without a third `npm start` (each costs a JVM and a TypeScript start).
   */
  let stopped: { dataDir: string; keyId: string; escrowKey: string | undefined } | undefined;
  const newDataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'receipts-start-'));
    dataDirs.push(dir);
    return dir;
  };

  afterEach(async () => {
    await stopAllProcessGroups();
  });

  afterAll(async () => {
    await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it(
    'serves health, prints how to create keys, manages keys with the admin CLI, and Ctrl-C stops everything',
    async () => {
      const dataDir = await newDataDir();
      const service = await startService(dataDir);
      expect(service.group.output()).toContain('npm run admin -- api-keys create');
      const state = JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8')) as {
        url: string;
        dynamoDbEndpoint: string;
      };
      expect(state.url).toBe(service.url);
      expect(await answersHttp(state.dynamoDbEndpoint)).toBe(true);

      // The admin CLI finds the running stack and manages keys against it.
      const created = JSON.parse(
        await admin(
          dataDir,
          'create',
          '--name',
          'CLI issuer',
          '--roles',
          'issuer',
          '--tier',
          'free',
          '--json',
        ),
      ) as { apiKey: string; keyId: string; tier: string };
      expect(created).toMatchObject({ tier: 'free', apiKey: expect.stringMatching(/^rk_/) });
      const keys = await fetch(`${service.url}/api/v1/onboarding/generate-keys`, {
        method: 'POST',
        headers: { 'X-API-Key': created.apiKey },
      });
      expect(keys.status).toBe(200);
      expect(
        JSON.parse(
          await admin(dataDir, 'set-tier', '--key-id', created.keyId, '--tier', 'enterprise', '--json'),
        ),
      ).toMatchObject({ tier: 'enterprise' });
      expect(JSON.parse(await admin(dataDir, 'revoke', '--key-id', created.keyId, '--json'))).toMatchObject({
        status: 'revoked',
      });
      const listed = JSON.parse(await admin(dataDir, 'list', '--json')) as {
        keyId: string;
        status: string;
      }[];
      expect(listed).toEqual([
        expect.objectContaining({ keyId: created.keyId, status: 'revoked', tier: 'enterprise' }),
      ]);
      expect(listed[0]).not.toHaveProperty('secretHash');
      await expect(
        admin(dataDir, 'create', '--name', 'x', '--roles', 'admin', '--tier', 'free'),
      ).rejects.toThrow(/--roles/);

      const escrowKey = escrowKeyOf(service.group.output());
      expect(escrowKey).toMatch(/^local-escrow-/);

      await interrupt(service);
      // Every process of the group has ended, DynamoDB Local included: nothing listens any more.
      expect(await answersHttp(`${service.url}/api/v1/health`)).toBe(false);
      expect(await answersHttp(state.dynamoDbEndpoint)).toBe(false);
      stopped = { dataDir, keyId: created.keyId, escrowKey };
    },
    patience(240_000),
  );

  it(
    'indexes receipts stored before the evidence index: the admin command, and every start (issue 20)',
    async () => {
      const dataDir = await newDataDir();
      const first = await startService(dataDir);
      const merchant = await adminJson<{ apiKey: string }>(
        dataDir,
        'api-keys',
        'create',
        '--name',
        'Merchant',
        '--roles',
        'merchant',
        '--tier',
        'enterprise',
      );
      const escrowed = async () => {
        const receipt = sampleReceipt();
        const hashedPan = newHashedPan();
        const reply = await fetch(`${first.url}/api/v1/receipts/encrypt`, {
          method: 'POST',
          headers: { 'X-API-Key': merchant.apiKey, 'Content-Type': 'application/json' },
          body: JSON.stringify({
            receipt,
            recipientIdentifier: { type: 'email', value: 'start@example.com' },
            recipientHashedPan: hashedPan,
          }),
        });
        expect(reply.status).toBe(200);
        return { receipt, hashedPan };
      };
      const one = await escrowed();
      await asStoredBeforeTheIndex(dataDir, one.receipt, one.hashedPan);
      expect(await storedReceipt(dataDir, one.receipt.receiptId)).toHaveProperty('pendingRecipient');

      // The operator's command (the same with --aws for a deployed stage), and again: nothing left to do.
      expect(await adminJson(dataDir, 'evidence', 'backfill')).toEqual({
        receiptsIndexed: 1,
        entriesRekeyed: 0,
        skipped: 0,
      });
      expect(await adminJson(dataDir, 'evidence', 'backfill')).toEqual({
        receiptsIndexed: 0,
        entriesRekeyed: 0,
        skipped: 0,
      });
      expect(await storedReceipt(dataDir, one.receipt.receiptId)).not.toHaveProperty('pendingRecipient');
      // The key audit reads the same data folder: nothing stored yet breaks the rules.
      expect(await adminJson(dataDir, 'keys', 'audit')).toEqual({ keysChecked: 0, findings: [] });

      // `npm start` does it before serving.
      const two = await escrowed();
      await asStoredBeforeTheIndex(dataDir, two.receipt, two.hashedPan);
      await interrupt(first);
      const second = await startService(dataDir);
      expect(second.group.output()).toMatch(/evidence index brought up to date.*"receiptsIndexed":1/);
      expect(await storedReceipt(dataDir, two.receipt.receiptId)).not.toHaveProperty('pendingRecipient');
      await interrupt(second);
    },
    patience(240_000),
  );

  it(
    'keeps its data across a restart: keys, their state and the escrow key',
    async () => {
      if (!stopped) throw new Error('the first test did not leave a stopped stack to start again');
      const { dataDir, keyId, escrowKey } = stopped;
      const second = await startService(dataDir);
      expect(escrowKeyOf(second.group.output())).toBe(escrowKey);
      // Only a first start explains how to make keys.
      expect(second.group.output()).not.toContain('npm run admin -- api-keys create');
      const listed = JSON.parse(await admin(dataDir, 'list', '--json')) as {
        keyId: string;
        status: string;
      }[];
      expect(listed).toEqual([expect.objectContaining({ keyId, status: 'revoked', tier: 'enterprise' })]);
      await interrupt(second);
    },
    patience(240_000),
  );
});
