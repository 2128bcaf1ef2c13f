import type { Clock } from '../../lib/kernel/clock.js';
import type { LogLevel } from '../../lib/kernel/log.js';
import { startLocalStack, type LocalStack } from '../../local/stack.js';
import { startSandboxProcess } from './sandbox-process.js';

/**
 * Real time plus an offset the bench moves forward: a grant-access run starts with every token slot
 * expired, so no run meets a user who already holds 5 live tokens, and nothing sleeps for it.
 */
export class SkippingClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  skip(ms: number): void {
    this.offsetMs += ms;
  }
}

/**
 * The local stack on DynamoDB Local in memory, with the gateway sandbox in a process of its own (so
 * its CPU is nobody's) and a SkippingClock; both stopped when `run` ends.
 */
export async function withBenchStack<T>(
  logLevel: LogLevel,
  run: (stack: LocalStack, clock: SkippingClock, sandboxUrl: string) => Promise<T>,
): Promise<T> {
  const sandbox = await startSandboxProcess();
  const clock = new SkippingClock();
  try {
    const stack = await startLocalStack({
      inMemory: true,
      port: 0,
      logLevel,
      clock,
      // A key is what makes the stack leave its in-process sandbox out; the URL sends the SDKs to ours.
      env: { STRIPE_SECRET_KEY: 'sk_test_bench_sandbox', GATEWAY_SANDBOX_URL: sandbox.url },
    });
    try {
      return await run(stack, clock, sandbox.url);
    } finally {
      await stack.close();
    }
  } finally {
    await sandbox.stop();
  }
}
