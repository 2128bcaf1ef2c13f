import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * A timeout that holds on a loaded machine: `idleMs` is what is generous on an idle one, and it
 * grows with the load average per core (a CI runner with another test run beside it sits at 3 per
 * core), so a probe does not give up while the machine is merely busy.
 */
export function patience(idleMs: number): number {
  const [oneMinute = 0] = loadavg();
  return Math.ceil(idleMs * Math.max(1, oneMinute / availableParallelism()));
}

/**
 * Calls `probe` until it returns a value, for at most `timeoutMs`; `abort` returning a reason (the
 * process being waited for has exited, say) ends the wait at once with that reason.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; abort?: () => string | undefined },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const aborted = options.abort?.();
    if (aborted) throw new Error(`${what}: ${aborted}`);
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`${what}: not within ${options.timeoutMs} ms`);
    await delay(options.intervalMs ?? 200);
  }
}

/** Whether an HTTP server answers at `url` (any status), waiting for the answer as long as the load needs. */
export async function answersHttp(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(patience(10_000)) });
    return true;
  } catch {
    return false;
  }
}

export interface ProcessGroup {
  readonly pid: number;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** The exit code or signal once the leader has exited, else undefined. */
  exitStatus(): string | undefined;
  /** Resolves with the first match of `pattern` in the output; fails if the leader exits first. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** Sends `signal` to every process of the group (what Ctrl-C in a terminal does with SIGINT). */
  signal(signal: NodeJS.Signals): void;
  /** Resolves once no process of the group is left; fails after `timeoutMs`. */
  gone(timeoutMs: number): Promise<void>;
  /** SIGTERM, then SIGKILL if anything of the group is still there after a grace period. */
  stop(): Promise<void>;
}

const running = new Set<ProcessGroup>();

const groupAlive = (pid: number): boolean => {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of the group exists but belongs to someone else; still alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Spawns `command` as the leader of a new process group, so that everything it starts in turn (npm →
 * tsx → node → java) can be signalled and stopped together. Every group started here is tracked
 * until it is gone; `stopAllProcessGroups` in an afterEach/afterAll stops whatever a failing test
 * left running.
 */
export function startProcessGroup(
  command: string,
  args: string[],
  options: Pick<SpawnOptions, 'cwd' | 'env'> = {},
): ProcessGroup {
  const child: ChildProcess = spawn(command, args, {
    ...options,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (child.pid === undefined) throw new Error(`could not spawn ${command}`);
  const pid = child.pid;
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exitStatus = () =>
    child.exitCode !== null
      ? `exited with code ${child.exitCode}`
      : child.signalCode !== null
        ? `killed by ${child.signalCode}`
        : undefined;

  const group: ProcessGroup = {
    pid,
    output: () => output,
    exitStatus,
    waitForOutput: (pattern, timeoutMs) =>
      pollUntil(
        `waiting for ${pattern} from ${command} ${args.join(' ')}`,
        async () => pattern.exec(output) ?? undefined,
        {
          timeoutMs,
          // Whatever the leader printed last may still be in the pipe: one more look after it exits.
          abort: () => (exitStatus() && !pattern.test(output) ? `${exitStatus()}:\n${output}` : undefined),
        },
      ),
    signal: (signal) => {
      try {
        process.kill(-pid, signal);
      } catch {
        // The group is gone already.
      }
    },
    gone: async (timeoutMs) => {
      await pollUntil(
        `process group ${pid} (${command}) to end`,
        async () => (groupAlive(pid) ? undefined : true),
        {
          timeoutMs,
          intervalMs: 100,
        },
      );
      running.delete(group);
    },
    stop: async () => {
      if (!groupAlive(pid)) {
        running.delete(group);
        return;
      }
      group.signal('SIGTERM');
      try {
        await group.gone(patience(10_000));
      } catch {
        group.signal('SIGKILL');
        await group.gone(patience(10_000));
      }
    },
  };
  running.add(group);
  return group;
}

/** Stops every process group this test file started that is still there, also after a failed test. */
export async function stopAllProcessGroups(): Promise<void> {
  await Promise.all([...running].map((group) => group.stop()));
}
