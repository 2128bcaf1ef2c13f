import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type BatchGetCommandInput,
  type BatchWriteCommandInput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import {
  backoffMs,
  BATCH_GET_MAX,
  BATCH_WRITE_MAX,
  defaultBatchRetry,
  sendInBatches,
  UnprocessedItemsError,
  type BatchRetry,
} from '../../lib/db/batch.js';
import { createDynamoClients, type DynamoClients } from '../../lib/db/client.js';

type WriteRequest = NonNullable<BatchWriteCommandInput['RequestItems']>[string][number];

/**
 * The batch helper against DynamoDB Local, sending BatchWriteItem and BatchGetItem calls as the
 * repositories do (lib/db/receipts.ts, transactions.ts, access-tokens.ts). DynamoDB Local always processes a whole batch, so the
 * unprocessed path is made by a throttling client (aws-sdk-client-mock on a second DynamoDB client):
 * it hands part of each call to the real one and answers the rest as unprocessed, as DynamoDB does.
 */
describe('batch writes and reads, retried with back-off', () => {
  const endpoint = process.env.TEST_DYNAMODB_ENDPOINT;
  const table = `batch-${randomBytes(4).toString('hex')}`;
  let real: DynamoClients;

  /** A policy whose pauses are recorded, never slept. */
  function recording(overrides: Partial<BatchRetry> = {}): { policy: BatchRetry; pauses: number[] } {
    const pauses: number[] = [];
    return {
      pauses,
      policy: {
        ...defaultBatchRetry,
        random: () => 0.5,
        ...overrides,
        sleep: (ms) => {
          pauses.push(ms);
          return Promise.resolve();
        },
      },
    };
  }

  const keys = (count: number, prefix: string) =>
    Array.from({ length: count }, (_, index) => ({ pk: `${prefix}-${index}` }));
  const puts = (count: number, prefix: string): WriteRequest[] =>
    keys(count, prefix).map((key) => ({ PutRequest: { Item: { ...key, value: key.pk.length } } }));
  const pksOf = (items: Record<string, unknown>[]) => items.map((item) => item.pk as string).sort();

  /** Writes through `doc` in calls of 25, as ReceiptRepository.deleteAll does. */
  const writeAll = (doc: DynamoDBDocumentClient, requests: WriteRequest[], policy: BatchRetry) =>
    sendInBatches(
      requests,
      BATCH_WRITE_MAX,
      async (pending) => {
        const result = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
        return (result.UnprocessedItems?.[table] ?? []) as typeof pending;
      },
      `batch writes to ${table}`,
      policy,
    );

  /** Reads through `doc` in calls of 100, as TransactionRepository.getMany does. */
  async function getAll(
    doc: DynamoDBDocumentClient,
    wanted: Record<string, unknown>[],
    policy: BatchRetry = defaultBatchRetry,
  ): Promise<Record<string, unknown>[]> {
    const found: Record<string, unknown>[] = [];
    await sendInBatches(
      wanted,
      BATCH_GET_MAX,
      async (pending) => {
        const result = await doc.send(
          new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }),
        );
        found.push(...(result.Responses?.[table] ?? []));
        return result.UnprocessedKeys?.[table]?.Keys ?? [];
      },
      `batch reads of ${table}`,
      policy,
    );
    return found;
  }

  /** A client that gets `perCall` requests done through the real one and leaves the rest unprocessed. */
  function throttling(perCall: number): { doc: DynamoDBDocumentClient; sizes: number[] } {
    const { doc } = createDynamoClients({ region: 'us-east-1', endpoint });
    const sizes: number[] = [];
    const mock = mockClient(doc);
    mock.on(BatchWriteCommand).callsFake(async (input: BatchWriteCommandInput) => {
      const requests = input.RequestItems?.[table] ?? [];
      sizes.push(requests.length);
      await real.doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests.slice(0, perCall) } }));
      const left = requests.slice(perCall);
      return { UnprocessedItems: left.length > 0 ? { [table]: left } : {} };
    });
    mock.on(BatchGetCommand).callsFake(async (input: BatchGetCommandInput) => {
      const wanted = input.RequestItems?.[table];
      const requested = wanted?.Keys ?? [];
      sizes.push(requested.length);
      const answer = await real.doc.send(
        new BatchGetCommand({ RequestItems: { [table]: { ...wanted, Keys: requested.slice(0, perCall) } } }),
      );
      const left = requested.slice(perCall);
      return {
        Responses: answer.Responses,
        UnprocessedKeys: left.length > 0 ? { [table]: { ...wanted, Keys: left } } : {},
      };
    });
    return { doc, sizes };
  }

  beforeAll(async () => {
    if (!endpoint) throw new Error('TEST_DYNAMODB_ENDPOINT is not set: run the tests with `npm test`');
    real = createDynamoClients({ region: 'us-east-1', endpoint });
    await real.client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  });

  afterAll(async () => {
    await real?.client.send(new DeleteTableCommand({ TableName: table }));
    real?.client.destroy();
  });

  it('writes and deletes in calls of 25 and reads in calls of 100, with no pause when all is processed', async () => {
    // A client that passes every call through whole: it only counts the calls' sizes.
    const { doc, sizes } = throttling(Number.MAX_SAFE_INTEGER);
    const { policy, pauses } = recording();
    await writeAll(doc, puts(60, 'whole'), policy);
    const wanted = [...keys(60, 'whole'), ...keys(150, 'absent')];
    expect(pksOf(await getAll(doc, wanted, policy))).toEqual(
      keys(60, 'whole')
        .map((key) => key.pk)
        .sort(),
    );
    await writeAll(
      doc,
      keys(60, 'whole').map((Key) => ({ DeleteRequest: { Key } })),
      policy,
    );
    expect(await getAll(real.doc, keys(60, 'whole'), policy)).toEqual([]);
    expect(sizes).toEqual([25, 25, 10, 100, 100, 10, 25, 25, 10]);
    expect(pauses).toEqual([]);
  });

  it('sends what is left unprocessed again, after doubling pauses, until DynamoDB has it all', async () => {
    const { doc, sizes } = throttling(10);
    const { policy, pauses } = recording();
    await writeAll(doc, puts(30, 'throttled'), policy);
    // 25 then 15 left, then 5; the last chunk of 5 goes at once.
    expect(sizes).toEqual([25, 15, 5, 5]);
    expect(pauses).toEqual([backoffMs(policy, 1), backoffMs(policy, 2)]);
    expect(pauses).toEqual([25, 50]);
    // Every item reached the real table.
    const stored = await getAll(real.doc, keys(30, 'throttled'));
    expect(stored).toHaveLength(30);
  });

  it('asks again for keys left unprocessed, keeping what each answer held', async () => {
    await writeAll(real.doc, puts(40, 'read'), recording().policy);
    const { doc, sizes } = throttling(15);
    const { policy, pauses } = recording();
    const found = await getAll(doc, keys(40, 'read'), policy);
    expect(pksOf(found)).toEqual(
      keys(40, 'read')
        .map((key) => key.pk)
        .sort(),
    );
    expect(sizes).toEqual([40, 25, 10]);
    expect(pauses).toEqual([25, 50]);
  });

  it('gives up after its attempts, naming the table and what is left, having paused between each', async () => {
    const { doc, sizes } = throttling(1);
    const { policy, pauses } = recording({ maxAttempts: 4 });
    const attempt = writeAll(doc, puts(10, 'stuck'), policy);
    await expect(attempt).rejects.toThrow(UnprocessedItemsError);
    await expect(attempt).rejects.toThrow(`batch writes to ${table}: 6 left unprocessed after 4 attempts`);
    expect(sizes).toEqual([10, 9, 8, 7]);
    expect(pauses).toHaveLength(3);
  });

  it('draws each pause below a ceiling that doubles up to the cap (full jitter)', () => {
    const at = (random: number, retry: number) =>
      backoffMs({ ...defaultBatchRetry, baseDelayMs: 50, maxDelayMs: 1_000, random: () => random }, retry);
    expect([1, 2, 3, 4, 5, 6, 7].map((retry) => at(0.9999, retry))).toEqual([
      49, 99, 199, 399, 799, 999, 999,
    ]);
    expect([1, 2, 3, 4, 5].map((retry) => at(0, retry))).toEqual([0, 0, 0, 0, 0]);
    // The default's pauses add up to at most 1.5 s however unlucky the draws: it fits a request.
    const worst = Array.from({ length: defaultBatchRetry.maxAttempts - 1 }, (_, index) =>
      backoffMs({ ...defaultBatchRetry, random: () => 0.9999 }, index + 1),
    );
    expect(worst.reduce((sum, pause) => sum + pause, 0)).toBeLessThan(1_600);
  });

  it('makes no call for nothing', async () => {
    const { doc, sizes } = throttling(1);
    await writeAll(doc, [], recording().policy);
    expect(await getAll(doc, [])).toEqual([]);
    expect(sizes).toEqual([]);
  });
});
