/**
 * Captures everything this test worker writes to stdout and stderr (Powertools Logger writes JSON
 * lines there), so a test can assert that no secret ever reached a log line.
 */
export interface LogCapture {
  text(): string;
  restore(): void;
}

export function captureLogs(options: { echo?: boolean } = {}): LogCapture {
  const chunks: string[] = [];
  const originals = {
    out: process.stdout.write.bind(process.stdout),
    err: process.stderr.write.bind(process.stderr),
  };
  const tap =
    (original: typeof process.stdout.write) =>
    (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return options.echo ? (original as (...args: unknown[]) => boolean)(chunk, ...rest) : true;
    };
  process.stdout.write = tap(originals.out) as typeof process.stdout.write;
  process.stderr.write = tap(originals.err) as typeof process.stderr.write;
  return {
    text: () => chunks.join(''),
    restore: () => {
      process.stdout.write = originals.out;
      process.stderr.write = originals.err;
    },
  };
}
