import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
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

describe('npm start', () => {
  it('serves health within 30 seconds, prints how to create keys, manages keys with the admin CLI, and Ctrl-C stops everything', async () => {
    const port = await freePort();
    const dataDir = await mkdtemp(join(tmpdir(), 'receipts-start-'));
    const started = Date.now();
    // detached: the child leads its own process group, so a group SIGINT is what Ctrl-C sends.
    const child = spawn('npm', ['start', '--', '--in-memory'], {
      env: { ...process.env, PORT: String(port), LOCAL_DATA_DIR: dataDir, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      let health: Response | undefined;
      while (Date.now() - started < 30_000 && !health) {
        health = await fetch(`http://127.0.0.1:${port}/api/v1/health`).catch(() => undefined);
        if (!health) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(health?.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(output).toContain('npm run admin -- api-keys create');
      const state = JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8')) as {
        dynamoDbEndpoint: string;
      };
      expect(await answers(state.dynamoDbEndpoint)).toBe(true);

      // The admin CLI finds the running stack and manages keys against it.
      const admin = async (...args: string[]) =>
        (
          await run('npm', ['run', '-s', 'admin', '--', 'api-keys', ...args], {
            env: { ...process.env, LOCAL_DATA_DIR: dataDir, NODE_OPTIONS: '' },
          })
        ).stdout;
      const created = JSON.parse(
        await admin('create', '--name', 'CLI issuer', '--roles', 'issuer', '--tier', 'free', '--json'),
      ) as {
        apiKey: string;
        keyId: string;
        tier: string;
      };
      expect(created).toMatchObject({ tier: 'free', apiKey: expect.stringMatching(/^rk_/) });
      const keys = await fetch(`http://127.0.0.1:${port}/api/v1/onboarding/generate-keys`, {
        method: 'POST',
        headers: { 'X-API-Key': created.apiKey },
      });
      expect(keys.status).toBe(200);
      expect(
        JSON.parse(await admin('set-tier', '--key-id', created.keyId, '--tier', 'enterprise', '--json')),
      ).toMatchObject({ tier: 'enterprise' });
      expect(JSON.parse(await admin('revoke', '--key-id', created.keyId, '--json'))).toMatchObject({
        status: 'revoked',
      });
      const listed = JSON.parse(await admin('list', '--json')) as {
        keyId: string;
        status: string;
        secretHash?: string;
      }[];
      expect(listed).toEqual([
        expect.objectContaining({ keyId: created.keyId, status: 'revoked', tier: 'enterprise' }),
      ]);
      expect(listed[0]).not.toHaveProperty('secretHash');
      await expect(admin('create', '--name', 'x', '--roles', 'admin', '--tier', 'free')).rejects.toThrow(
        /--roles/,
      );

      process.kill(-child.pid!, 'SIGINT');
      await exited;
      expect(await answers(`http://127.0.0.1:${port}/api/v1/health`)).toBe(false);
      expect(await answers(state.dynamoDbEndpoint)).toBe(false);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
  }, 90_000);
});
