import { readFile, writeFile } from 'node:fs/promises';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { Logger } from '../lib/kernel/log.js';
import type { DynamoDBRecord } from 'aws-lambda';
import { dispatchReceiptStream } from '../lib/webhooks/dispatch.js';
import type { DispatchDeps } from '../lib/webhooks/queue.js';
import { sweepDueDeliveries } from '../lib/webhooks/sweep.js';

export interface Dispatcher {
  /** Stops polling and sweeping, after the cycle under way ends. */
  stop(): Promise<void>;
  /** Polls again from where it stopped (the last processed record of each shard). */
  start(): void;
}

/** `npm start`'s poll interval: a stored receipt's webhook leaves within about this. */
export const DEFAULT_DISPATCHER_INTERVAL_MS = 250;

export interface DispatcherOptions {
  dynamo: DynamoDBClient;
  endpoint: string;
  region: string;
  receiptsTable: string;
  /** Delivery's deps with the local delivery queue (local/delivery-queue.ts). */
  deps: DispatchDeps;
  logger: Logger;
  /** How often the stream is read and due deliveries swept. */
  intervalMs: number;
  /** Where the last processed sequence number of each shard is kept across restarts; memory otherwise. */
  checkpointFile?: string;
}

type Checkpoints = Record<string, string>;

async function loadCheckpoints(file: string | undefined): Promise<Checkpoints> {
  if (!file) return {};
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Checkpoints;
  } catch {
    return {};
  }
}

/**
 * The local stand-in for two AWS pieces, running the same code they run: the receipts stream's event
 * source mapping (GetRecords on DynamoDB Local's stream, each batch handed to dispatchReceiptStream,
 * as functions/webhooks/webhook-dispatch does) and the EventBridge schedule (sweepDueDeliveries, as
 * functions/webhooks/webhook-sweep does). Both only queue attempts, on the local delivery queue, so a
 * cycle never waits for a receiver. A shard is read on from the last processed record, from its start
 * the first time; a record read twice creates no second delivery, so a crash between processing
 * and checkpointing only repeats harmless work.
 */
export async function startDispatcher(
  options: DispatcherOptions,
): Promise<Dispatcher & { close(): Promise<void> }> {
  const streams = new DynamoDBStreamsClient({
    region: options.region,
    endpoint: options.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const checkpoints = await loadCheckpoints(options.checkpointFile);
  const iterators = new Map<string, string>();
  const closedShards = new Set<string>();
  let streamArn: string | undefined;

  async function iteratorFor(shardId: string): Promise<string | undefined> {
    const known = iterators.get(shardId);
    if (known) return known;
    const after = checkpoints[shardId];
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ...(after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return ShardIterator;
  }

  async function readShard(shardId: string): Promise<void> {
    let iterator = await iteratorFor(shardId);
    let renewed = false;
    while (iterator) {
      let page;
      try {
        page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 100 }));
      } catch (error) {
        iterators.delete(shardId);
        // Iterators expire after 15 minutes, and DynamoDB Local refuses a TRIM_HORIZON iterator taken
        // while its shard was empty once records arrive: one new iterator from the checkpoint.
        const stale = error instanceof Error && /ExpiredIterator|TrimmedDataAccess/.test(error.name);
        if (!stale || renewed) throw error;
        renewed = true;
        iterator = await iteratorFor(shardId);
        continue;
      }
      const records = (page.Records ?? []) as DynamoDBRecord[];
      const { batchItemFailures } = await dispatchReceiptStream({ Records: records }, options.deps);
      const failed = new Set(batchItemFailures.map((failure) => failure.itemIdentifier));
      // As Lambda does with a partial response: on from the first record reported.
      const firstFailed = records.findIndex((record) => failed.has(record.dynamodb?.SequenceNumber ?? ''));
      const processed = firstFailed < 0 ? records : records.slice(0, firstFailed);
      const last = processed.at(-1)?.dynamodb?.SequenceNumber;
      if (last) {
        checkpoints[shardId] = last;
        if (options.checkpointFile) await writeFile(options.checkpointFile, JSON.stringify(checkpoints));
      }
      if (firstFailed >= 0) {
        // Read again from the failed record, as Lambda retries a batch.
        iterators.delete(shardId);
        return;
      }
      if (!page.NextShardIterator) {
        closedShards.add(shardId);
        iterators.delete(shardId);
        return;
      }
      iterator = page.NextShardIterator;
      iterators.set(shardId, iterator);
      if (records.length === 0) return;
    }
  }

  async function cycle(): Promise<void> {
    if (!streamArn) {
      const { Table } = await options.dynamo.send(
        new DescribeTableCommand({ TableName: options.receiptsTable }),
      );
      streamArn = Table?.LatestStreamArn;
      if (!streamArn) throw new Error(`${options.receiptsTable} has no stream`);
    }
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      if (shard.ShardId && !closedShards.has(shard.ShardId)) await readShard(shard.ShardId);
    }
    await sweepDueDeliveries(options.deps);
  }

  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const schedule = () => {
    timer = setTimeout(() => {
      current = cycle()
        .catch((error: unknown) =>
          options.logger.warn('webhook dispatcher cycle failed; trying again', {
            error: error instanceof Error ? `${error.name}: ${error.message}` : 'unknown',
          }),
        )
        .finally(() => {
          if (running) schedule();
        });
    }, options.intervalMs);
  };

  const dispatcher = {
    start() {
      if (running) return;
      running = true;
      schedule();
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      await current;
    },
    async close() {
      await dispatcher.stop();
      streams.destroy();
    },
  };
  dispatcher.start();
  return dispatcher;
}
