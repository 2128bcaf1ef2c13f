import { afterEach, beforeEach, expect } from '@jest/globals';

/**
 * Captures everything this test worker writes to stdout and stderr (Powertools Logger writes JSON
 * lines there), so a test can assert that no secret ever reached a log line.
 */
export interface LogCapture {
  text(): string;
  restore(): void;
}

type Write = typeof process.stdout.write;

/** Writers installed by captures still open, so that a nested capture passes lines on to the outer one. */
const taps = new Set<Write>();

export function captureLogs(options: { echo?: boolean } = {}): LogCapture {
  const chunks: string[] = [];
  const originals = { out: process.stdout.write, err: process.stderr.write };
  const tap = (stream: NodeJS.WriteStream, original: Write): Write => {
    const forward = options.echo || taps.has(original);
    const write = (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return forward ? (original as (...args: unknown[]) => boolean).apply(stream, [chunk, ...rest]) : true;
    };
    taps.add(write as Write);
    return write as Write;
  };
  const out = tap(process.stdout, originals.out);
  const err = tap(process.stderr, originals.err);
  process.stdout.write = out;
  process.stderr.write = err;
  return {
    text: () => chunks.join(''),
    restore: () => {
      taps.delete(out);
      taps.delete(err);
      process.stdout.write = originals.out;
      process.stderr.write = originals.err;
    },
  };
}

/**
 * Runs `work` with the logs captured and returns what it wrote, so that a test checks its own log
 * lines and never those an earlier test left behind. The capture ends also when `work` throws.
 */
export async function logsWhile<T>(work: () => Promise<T>): Promise<{ value: T; text: string }> {
  const capture = captureLogs();
  try {
    const value = await work();
    return { value, text: capture.text() };
  } finally {
    capture.restore();
  }
}

/**
 * In the describe block it is called from: captures each test's own logs and fails that test if they
 * hold a value of `secrets()`, named by its label so that the failure does not print it. `secrets` is
 * read as each test ends, so it may include what the test itself created.
 */
export function expectNoSecretsInEachTestsLogs(
  secrets: () => Iterable<readonly [label: string, value: string]>,
): void {
  let capture: LogCapture | undefined;
  beforeEach(() => {
    capture = captureLogs();
  });
  afterEach(() => {
    const text = capture?.text() ?? '';
    capture?.restore();
    capture = undefined;
    const found = [...secrets()].filter(([, value]) => value !== '' && text.includes(value));
    expect(found.map(([label]) => label)).toEqual([]);
  });
}
