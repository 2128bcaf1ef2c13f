import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CardTagKeyring } from '../../lib/crypto/card-tag.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { EvidenceRepository, receiptRefOf } from '../../lib/db/evidence.js';
import { receiptTableKey } from '../../lib/db/receipts.js';
import { claimFactsOf } from '../../lib/receipts/encrypt.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { LocalCardTagKeyFile } from '../../local/card-tag-key.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { evidenceOfReceipt } from '../support/tables.js';
import {
  answersHttp,
  patience,
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
// Whatever NODE_OPTIONS the test run has (a --cpu-prof, say) are not the service's.
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
  // The health probes' budget as the default's 3 s, stretched by the machine's load like every wait here.
  const group = startProcessGroup('npm', ['start'], {
    env: childEnv(dataDir, { PORT: '0', HEALTH_CHECK_TIMEOUT_MS: String(patience(3_000)) }),
  });
  const printed = await group.waitForOutput(/Receipt service listening on (http:\/\/\S+)/, patience(90_000));
  const url = printed[1] ?? '';
  // Ready when it says so: the first request after "listening" is answered, healthy, with nothing left
  // to load (the gateway SDKs were loaded, and the clients warmed by a health check, before it).
  const health = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(patience(10_000)) });
  const text = await health.text();
  if (health.status !== 200)
    throw new Error(`the first health after "listening" answered ${health.status} ${text}`);
  expect(JSON.parse(text)).toMatchObject({
    data: {
      status: 'ok',
      dependencies: { dynamodb: { status: 'up' }, gateway_a: { status: 'up' }, gateway_b: { status: 'up' } },
    },
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

const WALKTHROUGH = '## Walk-through with curl';

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
        TableName: `${prefix}receipts-sharded`,
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
    await evidence.deleteAll(await evidenceOfReceipt(doc, `${prefix}evidence`, receiptRefOf(key)));
    const tag = keyring.tagOf(hashedPan);
    await doc.send(
      new UpdateCommand({
        TableName: `${prefix}receipts-sharded`,
        Key: receiptTableKey(key),
        UpdateExpression:
          'SET pendingRecipient = :tag, claimAt = :at, claimFacts = :facts REMOVE evidenceIds',
        ExpressionAttributeValues: {
          ':tag': tag,
          ':at': claimFactsOf(receipt).at,
          ':facts': keyring.sealFacts(tag, claimFactsOf(receipt)),
        },
      }),
    );
  });
}

/** Every ```bash block of the README's walk-through section, in order. */
function walkthroughScript(readme: string): string {
  const start = readme.indexOf(WALKTHROUGH);
  if (start < 0) throw new Error(`README.md has no "${WALKTHROUGH}" section`);
  const end = readme.indexOf('\n## ', start + WALKTHROUGH.length);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
  if (blocks.length === 0) throw new Error(`"${WALKTHROUGH}" has no bash block`);
  return blocks.join('\n');
}

/** The JSON documents printed one after another by `jq .` (each starts and ends at column 0). */
function printedDocuments(stdout: string): unknown[] {
  const documents: unknown[] = [];
  let current: string[] | null = null;
  for (const line of stdout.split('\n')) {
    if (current === null && line === '{') current = [];
    if (current === null) continue;
    current.push(line);
    if (line === '}') {
      documents.push(JSON.parse(current.join('\n')));
      current = null;
    }
  }
  return documents;
}

const hasCommand = (name: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/**
 * One data folder through its life, as a developer lives it: a first start, the admin CLI, the README's
 * walk-through in a second terminal, the evidence index brought up to date by the admin command, Ctrl-C;
 * and a restart that keeps everything and indexes what the first session left unindexed. The tests run
 * in this order and each starts from where the one before left the folder (a failure makes the later
 * ones fail too, naming what they missed): two `npm start`s in all, each a JVM and a TypeScript start,
 * where separate folders would take four.
 */
describe('npm start', () => {
  let dataDir = '';
  let running: RunningService | undefined;
  let state: { url: string; dynamoDbEndpoint: string } | undefined;
  /** What the first start left: the key made and revoked through the CLI, the escrow key's id. */
  let first: { keyId: string; escrowKey: string | undefined } | undefined;
  /** An escrowed receipt turned back into one stored before the index, for the restart to index. */
  let unindexed: DigitalReceipt | undefined;

  const service = (): RunningService => {
    if (!running) throw new Error('no npm start is running: an earlier test of this file failed');
    return running;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'receipts-start-'));
  });

  afterAll(async () => {
    await stopAllProcessGroups();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'serves health, prints how to create keys, and manages keys with the admin CLI',
    async () => {
      running = await startService(dataDir);
      expect(running.group.output()).toContain('npm run admin -- api-keys create');
      state = JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8')) as {
        url: string;
        dynamoDbEndpoint: string;
      };
      expect(state.url).toBe(running.url);
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
      const keys = await fetch(`${running.url}/api/v1/onboarding/generate-keys`, {
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

      const escrowKey = escrowKeyOf(running.group.output());
      expect(escrowKey).toMatch(/^local-escrow-/);
      first = { keyId: created.keyId, escrowKey };
    },
    patience(240_000),
  );

  /*
   * The README's curl walk-through, exactly as written there, in a second terminal while `npm start`
   * runs, so the README cannot drift from the service. This start listens on a port of the OS's
   * choice (PORT=0): the script finds it where a developer's would, in what the stack reported.
   */
  it(
    'runs the README walk-through with curl and jq, writes no file, and prints the receipt, then a refund and its refund receipt',
    async () => {
      const { url } = service();
      for (const command of ['bash', 'curl', 'jq']) {
        expect({ command, installed: hasCommand(command) }).toEqual({ command, installed: true });
      }
      const script = walkthroughScript(await readFile(new URL('../../README.md', import.meta.url), 'utf8'));
      // No address written in: the script reads the one the running stack reported, which is this one.
      expect(script).not.toMatch(/127\.0\.0\.1:\d+|localhost:\d+/);
      expect(JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8'))).toMatchObject({ url });
      // Nothing is written into the working directory (the repository): no redirection but to /dev/null.
      const code = script
        .split('\n')
        .filter((line) => !line.trimStart().startsWith('#'))
        .join('\n')
        .replaceAll('2>/dev/null', '');
      expect(code).not.toMatch(/[^<]>|\btee\b|\s-o\s|--output/);

      const bash = spawn('bash', ['-e', '-o', 'pipefail', '-s'], {
        cwd: new URL('../..', import.meta.url).pathname,
        env: childEnv(dataDir),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      bash.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      bash.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exitCode = new Promise<number | null>((resolve) => bash.once('close', resolve));
      bash.stdin.end(script);
      expect({ exitCode: await exitCode, stderr: stderr.replace(/^npm warn .*\n/gm, '') }).toEqual({
        exitCode: 0,
        stderr: '',
      });

      const [payment, receipt, refund, refundReceipt, ...rest] = printedDocuments(stdout);
      expect(rest).toEqual([]);
      expect(payment).toMatchObject({
        gateway: 'gateway_a',
        paymentId: expect.stringMatching(/^pi_/),
        clientSecret: expect.stringMatching(/^pi_\w+_secret_\w+$/),
        receiptMetadata: { isEscrowed: false },
      });
      expect(receipt).toMatchObject({
        merchant: { name: 'Corner Coffee' },
        items: [{ name: 'Flat white', quantity: 2, unitPrice: 450, totalPrice: 900 }],
        summary: { subtotal: 900, totalTax: 78, total: 978, currency: 'USD' },
      });
      // After the sale: confirmed in the sandbox (its event made the receipt succeeded), one line refunded.
      expect(stdout).toContain('\nsucceeded\n');
      expect(refund).toMatchObject({ amount: 489, status: 'succeeded', receiptId: expect.any(String) });
      expect(refundReceipt).toMatchObject({
        type: 'refund',
        relatedReceiptId: (receipt as { receiptId: string }).receiptId,
        items: [{ name: 'Flat white', quantity: 1, totalPrice: 450 }],
        summary: { subtotal: 450, totalTax: 39, total: 489 },
      });
      expect(stdout.trimEnd().endsWith('}')).toBe(true);
    },
    patience(120_000),
  );

  it(
    'indexes receipts stored before the evidence index with the admin command, and leaves one for the next start to index (issue 20)',
    async () => {
      const { url } = service();
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
        const reply = await fetch(`${url}/api/v1/receipts/encrypt`, {
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
        entriesNamed: 0,
        skipped: 0,
      });
      expect(await adminJson(dataDir, 'evidence', 'backfill')).toEqual({
        receiptsIndexed: 0,
        entriesRekeyed: 0,
        entriesNamed: 0,
        skipped: 0,
      });
      expect(await storedReceipt(dataDir, one.receipt.receiptId)).not.toHaveProperty('pendingRecipient');
      // The key audit reads the same data folder: what the walk-through stored breaks no rule.
      expect(await adminJson(dataDir, 'keys', 'audit')).toMatchObject({ findings: [] });

      // `npm start` does it before serving: one left unindexed for the restart below.
      const two = await escrowed();
      await asStoredBeforeTheIndex(dataDir, two.receipt, two.hashedPan);
      unindexed = two.receipt;
    },
    patience(240_000),
  );

  it(
    'stops everything on Ctrl-C, DynamoDB Local included',
    async () => {
      const stopping = service();
      running = undefined;
      await interrupt(stopping);
      // Every process of the group has ended: nothing listens any more.
      expect(await answersHttp(`${stopping.url}/api/v1/health`)).toBe(false);
      expect(await answersHttp(state!.dynamoDbEndpoint)).toBe(false);
    },
    patience(60_000),
  );

  it(
    'keeps its data across a restart: keys, their state and the escrow key, and indexes what was left unindexed',
    async () => {
      if (!first) throw new Error('the first start left nothing to find again: its test failed');
      running = await startService(dataDir);
      expect(escrowKeyOf(running.group.output())).toBe(first.escrowKey);
      // Only a first start explains how to make keys.
      expect(running.group.output()).not.toContain('npm run admin -- api-keys create');
      const listed = JSON.parse(await admin(dataDir, 'list', '--json')) as {
        keyId: string;
        status: string;
      }[];
      expect(listed).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ keyId: first.keyId, status: 'revoked', tier: 'enterprise' }),
        ]),
      );
      // Every start brings the evidence index up to date before serving (issue 20): the receipt the
      // session before left unindexed is indexed.
      if (!unindexed) throw new Error('the session before left no unindexed receipt: its test failed');
      expect(running.group.output()).toMatch(/evidence index brought up to date.*"receiptsIndexed":1/);
      expect(await storedReceipt(dataDir, unindexed.receiptId)).not.toHaveProperty('pendingRecipient');
      const last = service();
      running = undefined;
      await interrupt(last);
    },
    patience(240_000),
  );
});
