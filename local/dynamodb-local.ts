import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

export interface DynamoDbLocal {
  endpoint: string;
  stop(): Promise<void>;
  /** Ends the JVM at once, synchronously: for a process `exit` handler, where nothing can be awaited. */
  kill(): void;
}

export interface DynamoDbLocalOptions {
  /** Folder for the database files; omitted means in-memory. */
  dbPath?: string;
  port?: number;
  /** How long the emulator may take to answer; tests stretch it with the machine's load. */
  readyTimeoutMs?: number;
}

const require = createRequire(import.meta.url);

/** The jar ships inside the amplify-dynamodb-simulator package, so nothing is downloaded at run time. */
function emulatorDir(): string {
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

export function assertJava(): void {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'DynamoDB Local needs Java 17 or newer, and no `java` was found on PATH. ' +
        'Install it (Debian/Ubuntu: `apt-get update && apt-get install -y openjdk-17-jre-headless`; ' +
        'macOS: `brew install openjdk@17`) and start again.',
    );
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilListening(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited early with code ${child.exitCode}`);
    try {
      // Any HTTP answer (DynamoDB Local replies 400 to a bare GET) means it is up.
      await fetch(endpoint, { signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${timeoutMs} ms`);
}

export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  assertJava();
  const port = options.port ?? (await freePort());
  const dir = emulatorDir();
  const storage = options.dbPath ? ['-dbPath', options.dbPath] : ['-inMemory'];
  const child = spawn(
    'java',
    [
      '-Xms64m',
      // The client compiler only: the emulator's life is a test run or a developer's session, and C2
      // compiling behind it cost more CPU than its faster code saved (the test run's emulator used
      // 49 s of CPU with it and 32 s without; a start to first answer 2.9 s and 1.7 s).
      '-XX:TieredStopAtLevel=1',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      ...storage,
      // DynamoDB Local 1.24+ reports usage to AWS unless told not to: a local emulator has no business
      // phoning home, and offline the attempts cost CPU on every request.
      '-disableTelemetry',
      // The jar has no option for the listening address: it binds every interface. The exposure and
      // what to do about it are in docs/THREAT-MODEL.md (Local stack).
      '-port',
      String(port),
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilListening(endpoint, child, options.readyTimeoutMs ?? 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${stderr}`);
  }
  return {
    endpoint,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
    kill: () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
