/**
 * DynamoDB's batch calls may leave part of a request unprocessed (throttling, a partition's limit, the
 * 16 MB response cap) and still succeed. What is left is sent again after a pause that doubles with
 * each attempt and is drawn at random below that ceiling ("full jitter", as AWS advises, so instances
 * that were throttled together do not retry together), a bounded number of times.
 */
import {
  BatchGetCommand,
  BatchWriteCommand,
  type BatchWriteCommandInput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';

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
const WRITE_CHUNK = 25;
const GET_CHUNK = 100;

export class UnprocessedItemsError extends Error {
  constructor(what: string, left: number, attempts: number) {
    super(`${what}: ${left} left unprocessed after ${attempts} attempts`);
    this.name = 'UnprocessedItemsError';
  }
}

/** The pause before retry `retry` (1 for the first): full jitter below a doubling, capped ceiling. */
export const backoffMs = (policy: BatchRetry, retry: number): number =>
  Math.floor(policy.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1)));

/** Sends `pending` until nothing comes back unprocessed, pausing before every call but the first. */
async function untilProcessed<T>(
  first: T[],
  send: (pending: T[]) => Promise<T[]>,
  policy: BatchRetry,
  what: string,
): Promise<void> {
  let pending = first;
  for (let attempt = 0; pending.length > 0; attempt += 1) {
    if (attempt === policy.maxAttempts) throw new UnprocessedItemsError(what, pending.length, attempt);
    if (attempt > 0) await policy.sleep(backoffMs(policy, attempt));
    pending = await send(pending);
  }
}

const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, index) =>
    items.slice(index * size, index * size + size),
  );

export type WriteRequest = NonNullable<BatchWriteCommandInput['RequestItems']>[string][number];

/** Puts and deletes, 25 to a BatchWriteItem call, each chunk retried until DynamoDB has done all of it. */
export async function batchWriteAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  requests: readonly WriteRequest[],
  policy: BatchRetry = defaultBatchRetry,
): Promise<void> {
  for (const chunk of chunks(requests, WRITE_CHUNK)) {
    await untilProcessed(
      chunk,
      async (pending) => {
        const result = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
        return result.UnprocessedItems?.[tableName] ?? [];
      },
      policy,
      `batch writes to ${tableName}`,
    );
  }
}

/**
 * The items of these keys that exist, 100 keys to a BatchGetItem call, unprocessed keys asked again:
 * a key missing from the answer is an item that does not exist, never one DynamoDB skipped. In no
 * particular order. BatchGetItem refuses a call that names one key twice: callers pass distinct keys.
 */
export async function batchGetAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  options: { consistentRead: boolean },
  policy: BatchRetry = defaultBatchRetry,
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for (const chunk of chunks(keys, GET_CHUNK)) {
    await untilProcessed(
      chunk,
      async (pending) => {
        const result = await doc.send(
          new BatchGetCommand({
            RequestItems: { [tableName]: { Keys: pending, ConsistentRead: options.consistentRead } },
          }),
        );
        found.push(...(result.Responses?.[tableName] ?? []));
        return result.UnprocessedKeys?.[tableName]?.Keys ?? [];
      },
      policy,
      `batch reads of ${tableName}`,
    );
  }
  return found;
}
