import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort } from '../../local/dynamodb-local.js';

/** An npm script as a newcomer runs it: exit status and what it printed, npm's own config warnings aside. */
function npm(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string[] }> {
  const child = spawn('npm', args, {
    env: { ...process.env, NODE_OPTIONS: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (code) =>
      resolve({
        code,
        stderr: stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('npm warn')),
      }),
    ),
  );
}

describe('what a newcomer sees when the local stack is not there', () => {
  let dataDir: string;
  let blocker: Server;
  let blockedPort: number;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'newcomer-'));
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    blockedPort = (blocker.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => blocker.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('admin CLI against a stopped stack: one line naming `npm start` and the endpoint, exit 1', async () => {
    // What a stopped `npm start` leaves behind: its stack.json, pointing at a DynamoDB that is gone.
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    await writeFile(
      join(dataDir, 'stack.json'),
      JSON.stringify({ dynamoDbEndpoint: endpoint, tablePrefix: 'local-' }),
    );
    const result = await npm(['run', '-s', 'admin', '--', 'api-keys', 'list'], { LOCAL_DATA_DIR: dataDir });
    expect(result).toEqual({
      code: 1,
      stderr: [`The local stack is not running: start it with \`npm start\` (no DynamoDB at ${endpoint})`],
    });
  }, 60_000);

  it('npm start on a port in use: one line naming the port and PORT, exit 1', async () => {
    const result = await npm(['start', '--', '--in-memory'], {
      PORT: String(blockedPort),
      LOCAL_DATA_DIR: dataDir,
    });
    expect(result).toEqual({
      code: 1,
      stderr: [
        `Port ${blockedPort} is in use: stop the other process or set PORT=… (PORT=0 picks a free port)`,
      ],
    });
  }, 60_000);
});
