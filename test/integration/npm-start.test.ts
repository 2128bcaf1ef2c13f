import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort } from '../../local/dynamodb-local.js';

const run = promisify(execFile);

const answers = async (url: string): Promise<boolean> => {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
};

interface RunningService {
  output: () => string;
  /** Seconds from spawn to the first health answer. */
  readySeconds: number;
  healthStatus: number;
  /** Ctrl-C: SIGINT to the whole process group, then wait for the exit. */
  interrupt(): Promise<void>;
  kill(): void;
}

/** `npm start` as a developer runs it, in its own process group so a group SIGINT is what Ctrl-C sends. */
async function startService(port: number, dataDir: string, args: string[] = []): Promise<RunningService> {
  const started = Date.now();
  const child = spawn('npm', ['start', '--', ...args], {
    env: { ...process.env, PORT: String(port), LOCAL_DATA_DIR: dataDir, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let health: Response | undefined;
  while (Date.now() - started < 60_000 && !health && child.exitCode === null) {
    health = await fetch(`http://127.0.0.1:${port}/api/v1/health`).catch(() => undefined);
    if (!health) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const kill = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  return {
    output: () => output,
    readySeconds: (Date.now() - started) / 1000,
    healthStatus: health?.status ?? 0,
    interrupt: async () => {
      process.kill(-child.pid!, 'SIGINT');
      await exited;
    },
    kill,
  };
}

describe('npm start', () => {
  let port: number;
  let dataDir: string;
  let first: RunningService | undefined;
  let second: RunningService | undefined;

  const admin = async (...args: string[]) =>
    (
      await run('npm', ['run', '-s', 'admin', '--', 'api-keys', ...args], {
        env: { ...process.env, LOCAL_DATA_DIR: dataDir, NODE_OPTIONS: '' },
      })
    ).stdout;

  beforeAll(async () => {
    port = await freePort();
    dataDir = await mkdtemp(join(tmpdir(), 'receipts-start-'));
  });

  afterAll(() => {
    first?.kill();
    second?.kill();
  });

  it('serves health within 30 seconds, prints how to create keys, manages keys with the admin CLI, and Ctrl-C stops everything', async () => {
    first = await startService(port, dataDir);
    expect(first.healthStatus).toBe(200);
    expect(first.readySeconds).toBeLessThan(30);
    expect(first.output()).toContain('npm run admin -- api-keys create');
    const state = JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8')) as {
      dynamoDbEndpoint: string;
    };
    expect(await answers(state.dynamoDbEndpoint)).toBe(true);

    // The admin CLI finds the running stack and manages keys against it.
    const created = JSON.parse(
      await admin('create', '--name', 'CLI issuer', '--roles', 'issuer', '--tier', 'free', '--json'),
    ) as { apiKey: string; keyId: string; tier: string };
    expect(created).toMatchObject({ tier: 'free', apiKey: expect.stringMatching(/^rk_/) });
    const keys = await fetch(`http://127.0.0.1:${port}/api/v1/onboarding/generate-keys`, {
      method: 'POST',
      headers: { 'X-API-Key': created.apiKey },
    });
    expect(keys.status).toBe(200);
    expect(
      JSON.parse(await admin('set-tier', '--key-id', created.keyId, '--tier', 'enterprise', '--json')),
    ).toMatchObject({
      tier: 'enterprise',
    });
    expect(JSON.parse(await admin('revoke', '--key-id', created.keyId, '--json'))).toMatchObject({
      status: 'revoked',
    });
    const listed = JSON.parse(await admin('list', '--json')) as { keyId: string; status: string }[];
    expect(listed).toEqual([
      expect.objectContaining({ keyId: created.keyId, status: 'revoked', tier: 'enterprise' }),
    ]);
    expect(listed[0]).not.toHaveProperty('secretHash');
    await expect(admin('create', '--name', 'x', '--roles', 'admin', '--tier', 'free')).rejects.toThrow(
      /--roles/,
    );

    await first.interrupt();
    expect(await answers(`http://127.0.0.1:${port}/api/v1/health`)).toBe(false);
    expect(await answers(state.dynamoDbEndpoint)).toBe(false);
  }, 120_000);

  it('keeps its data across a restart: keys, their state and the escrow key', async () => {
    const escrowKeyOf = (output: string) => /escrow key: (\S+)/.exec(output)?.[1];
    const before = escrowKeyOf(first!.output());
    second = await startService(port, dataDir);
    expect(second.healthStatus).toBe(200);
    expect(escrowKeyOf(second.output())).toBe(before);
    // Only a first start explains how to make keys.
    expect(second.output()).not.toContain('npm run admin -- api-keys create');
    const listed = JSON.parse(await admin('list', '--json')) as { status: string; tier: string }[];
    expect(listed).toEqual([expect.objectContaining({ status: 'revoked', tier: 'enterprise' })]);
    await second.interrupt();
  }, 120_000);
});
