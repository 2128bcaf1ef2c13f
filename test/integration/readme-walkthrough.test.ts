import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort } from '../../local/dynamodb-local.js';

/**
 * Runs the README's curl walk-through, as written there, against `npm start`, so the README cannot
 * drift from the service. The one change made to the script: the README's base address
 * (http://127.0.0.1:3000) becomes the free port this test started the stack on.
 */

const README_BASE = 'http://127.0.0.1:3000';
const SECTION = '## Walk-through with curl';

/** Every ```bash block of the walk-through section, in order. */
function walkthroughScript(readme: string): string {
  const start = readme.indexOf(SECTION);
  if (start < 0) throw new Error(`README.md has no "${SECTION}" section`);
  const end = readme.indexOf('\n## ', start + SECTION.length);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
  if (blocks.length === 0) throw new Error(`"${SECTION}" has no bash block`);
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

describe('the README walk-through', () => {
  let dataDir: string;
  let service: ChildProcess | undefined;
  let baseUrl: string;
  let serviceOutput = '';

  const stopService = async () => {
    const child = service;
    service = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // npm start runs in its own process group: signal all of it (npm, tsx, DynamoDB Local's JVM).
    process.kill(-child.pid!, 'SIGINT');
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'readme-walkthrough-'));
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    service = spawn('npm', ['start'], {
      env: { ...process.env, PORT: String(port), LOCAL_DATA_DIR: dataDir, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    service.stdout!.on('data', (chunk: Buffer) => (serviceOutput += chunk.toString()));
    service.stderr!.on('data', (chunk: Buffer) => (serviceOutput += chunk.toString()));
    // Polls for readiness, as the README's reader waits for "listening" before the second terminal.
    // Generous: on a loaded two-core machine DynamoDB Local's JVM alone can take a minute to start.
    const deadline = Date.now() + 170_000;
    while (Date.now() < deadline) {
      if (service.exitCode !== null) break;
      const health = await fetch(`${baseUrl}/api/v1/health`).catch(() => undefined);
      if (health?.ok) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`npm start did not become healthy:\n${serviceOutput}`);
  }, 180_000);

  afterAll(async () => {
    await stopService();
    await rm(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('runs with curl and jq, writes no file, and prints the receipt, then a refund and its refund receipt', async () => {
    for (const command of ['bash', 'curl', 'jq']) {
      expect({ command, installed: hasCommand(command) }).toEqual({ command, installed: true });
    }
    const script = walkthroughScript(await readFile(new URL('../../README.md', import.meta.url), 'utf8'));
    expect(script.split(README_BASE)).toHaveLength(2);
    // Nothing is written into the working directory (the repository): no redirection but to /dev/null.
    const code = script
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('#'))
      .join('\n')
      .replaceAll('2>/dev/null', '');
    expect(code).not.toMatch(/[^<]>|\btee\b|\s-o\s|--output/);

    const run = spawn('bash', ['-e', '-o', 'pipefail', '-s'], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, LOCAL_DATA_DIR: dataDir, NODE_OPTIONS: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    run.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exitCode = new Promise<number | null>((resolve) => run.once('close', resolve));
    run.stdin.end(script.replace(README_BASE, baseUrl));
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
  }, 120_000);
});
