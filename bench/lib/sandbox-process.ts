import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The gateway sandbox (test double) in a process of its own, so the CPU it spends answering the stripe
 * SDK is not counted as the service's, nor as the floor's: both call it alike.
 */
export interface SandboxProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const mainScript = fileURLToPath(new URL('../../local/gateway-sandbox/main.ts', import.meta.url));

export async function startSandboxProcess(): Promise<SandboxProcess> {
  // In memory: a payments folder would add file writes the service's figures should not carry.
  const env = { ...process.env };
  delete env.GATEWAY_SANDBOX_DATA_DIR;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', mainScript, '0'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the gateway sandbox did not start in 30 s')), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway sandbox exited with ${code}: ${out.slice(0, 300)}`));
    });
  });
  return {
    url,
    pid: child.pid ?? -1,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
