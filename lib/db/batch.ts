/**
 * DynamoDB's batch calls may leave part of a request unprocessed (throttling, a partition's limit, the
 * 16 MB response cap) and still succeed. What is left is sent again after a pause that doubles with
 * each attempt and is drawn at random below that ceiling ("full jitter", as AWS advises, so instances
 * that were throttled together do not retry together), a bounded number of times.
 */
export interface BatchRetry {
  /** Calls per chunk, the first included, before giving up. */
  maxAttempts: number;
  /** The ceiling of the first pause; each later one doubles, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Waits that long; a test passes one that records the pause and returns at once. */
  sleep: (ms: number) => Promise<void>;
  /** Uniform in [0, 1): where below its ceiling a pause falls. */
  random: () => number;
}

/** At most ~1.5 s of pauses in all (50 + 100 + 200 + 400 + 800 ms ceilings): fits inside a request. */
export const defaultBatchRetry: BatchRetry = {
  maxAttempts: 6,
  baseDelayMs: 50,
  maxDelayMs: 1_000,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
};

/** BatchWriteItem takes at most 25 requests; BatchGetItem at most 100 keys. */
export const BATCH_WRITE_MAX = 25;
export const BATCH_GET_MAX = 100;

export class UnprocessedItemsError extends Error {
  constructor(what: string, left: number, attempts: number) {
    super(`${what}: ${left} left unprocessed after ${attempts} attempts`);
    this.name = 'UnprocessedItemsError';
  }
}

/** The pause before retry `retry` (1 for the first): full jitter below a doubling, capped ceiling. */
export const backoffMs = (policy: BatchRetry, retry: number): number =>
  Math.floor(policy.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1)));

/**
 * Sends `items` in chunks of `chunkSize` through `send`, which makes one batch call and returns what
 * DynamoDB left unprocessed; that is sent again, after a back-off pause, until nothing is left or the
 * attempts run out (UnprocessedItemsError). The repository builds the command itself, so each
 * repository file still names every call it makes on its table (infra/permissions.ts is checked
 * against them).
 */
export async function sendInBatches<T>(
  items: readonly T[],
  chunkSize: number,
  send: (chunk: T[]) => Promise<T[]>,
  what: string,
  policy: BatchRetry = defaultBatchRetry,
): Promise<void> {
  for (let start = 0; start < items.length; start += chunkSize) {
    let pending = items.slice(start, start + chunkSize);
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt === policy.maxAttempts) throw new UnprocessedItemsError(what, pending.length, attempt);
      if (attempt > 0) await policy.sleep(backoffMs(policy, attempt));
      pending = await send(pending);
    }
  }
}
