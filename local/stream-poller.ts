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
  /**
   * Something may have been written (a request was served): the next poll comes within `intervalMs`,
   * however long the dispatcher had been idle. With `sweep` (the service's clock moved, so retries may
   * have fallen due) that poll also sweeps, whatever the sweep interval.
   */
  nudge(options?: { sweep?: boolean }): void;
}

/** `npm start`'s poll interval: a stored receipt's webhook leaves within about this. */
export const DEFAULT_DISPATCHER_INTERVAL_MS = 250;

/**
 * How often due retries are swept. In AWS an EventBridge schedule runs the sweeper once a minute; a
 * sweep is one query per due bucket (17), so sweeping on every stream poll made an idle local stack
 * ask DynamoDB Local about 95 times a second (a fifth of a core with the emulator's share). Once a
 * second keeps a retry prompt for a developer. A move of a test's manual clock asks for a sweep on the
 * next poll (Dispatcher.nudge), whatever the interval.
 */
export const DEFAULT_SWEEP_INTERVAL_MS = 1_000;

/**
 * How often the stream's shards are listed again while every known shard is open. A shard that
 * closes (read to its end) has its list read again on the next poll, which is when new shards appear.
 */
const DESCRIBE_INTERVAL_MS = 5_000;

/**
 * The longest wait between two polls of an idle stream. Each poll that finds nothing doubles the wait,
 * from `intervalMs` up to this; a poll that finds records, or a nudge, brings it back to `intervalMs`.
 * Polling an idle stream every 200 ms kept DynamoDB Local and the service's process busy for a tenth
 * of a core per stack; a write made past the server (a test's own repository call) waits at most this.
 */
export const DEFAULT_IDLE_INTERVAL_MS = 2_000;

export interface DispatcherOptions {
  dynamo: DynamoDBClient;
  endpoint: string;
  region: string;
  receiptsTable: string;
  /** Delivery's deps with the local delivery queue (local/delivery-queue.ts). */
  deps: DispatchDeps;
  logger: Logger;
  /** How often the stream is read while records arrive or after a nudge. */
  intervalMs: number;
  /** The longest wait between polls of an idle stream: DEFAULT_IDLE_INTERVAL_MS unless set. */
  idleIntervalMs?: number;
  /** How often due deliveries are swept: DEFAULT_SWEEP_INTERVAL_MS unless set. */
  sweepIntervalMs?: number;
  /** Milliseconds of a monotonic clock, for the cadences above (not the service's clock). */
  monotonicMs?: () => number;
  /** Runs `poll` once after `ms`; returns the cancel. setTimeout unless a test takes the polls in hand. */
  schedule?: (poll: () => void, ms: number) => () => void;
  /** Where the last processed sequence number of each shard is kept across restarts; memory otherwise. */
  checkpointFile?: string;
  /**
   * The local delivery queue's messages whose visibility timeout has passed handed out again, on
   * every poll (SQS does it by itself; local/delivery-queue.ts).
   */
  redeliver?: () => Promise<void>;
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
 * source mapping (GetRecords on DynamoDB Local's stream every `intervalMs`, each batch handed to
 * dispatchReceiptStream, as functions/webhooks/webhook-dispatch does) and the EventBridge schedule
 * (sweepDueDeliveries every `sweepIntervalMs`, as functions/webhooks/webhook-sweep does). Both only queue attempts, on the local delivery queue, so a
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
  const monotonicMs = options.monotonicMs ?? (() => performance.now());
  const sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  let openShards: string[] = [];
  let describedAt = -Infinity;
  let sweptAt = -Infinity;
  /** Set by a nudge that asks for a sweep; the next poll sweeps whatever the interval. */
  let sweepAsked = false;

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

  /** Reads a shard on from its checkpoint; answers how many records it handed to the dispatcher. */
  async function readShard(shardId: string): Promise<number> {
    let read = 0;
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
      read += records.length;
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
        return read;
      }
      if (!page.NextShardIterator) {
        closedShards.add(shardId);
        iterators.delete(shardId);
        return read;
      }
      iterator = page.NextShardIterator;
      iterators.set(shardId, iterator);
      if (records.length === 0) return read;
    }
    return read;
  }

  /** One poll (and a sweep when one is due); true when it found work, which keeps polls frequent. */
  async function cycle(): Promise<boolean> {
    let found = 0;
    if (!streamArn) {
      const { Table } = await options.dynamo.send(
        new DescribeTableCommand({ TableName: options.receiptsTable }),
      );
      streamArn = Table?.LatestStreamArn;
      if (!streamArn) throw new Error(`${options.receiptsTable} has no stream`);
    }
    if (openShards.length === 0 || monotonicMs() - describedAt >= DESCRIBE_INTERVAL_MS) {
      const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
      describedAt = monotonicMs();
      openShards = (StreamDescription?.Shards ?? []).flatMap((shard) =>
        shard.ShardId && !closedShards.has(shard.ShardId) ? [shard.ShardId] : [],
      );
    }
    for (const shardId of openShards) found += await readShard(shardId);
    await options.redeliver?.();
    // A shard read to its end is closed: the next poll lists the shards again to find its children.
    openShards = openShards.filter((shardId) => !closedShards.has(shardId));
    if (sweepAsked || monotonicMs() - sweptAt >= sweepIntervalMs) {
      // Cleared before the sweep reads the clock: a move during it asks for the next poll's sweep.
      sweepAsked = false;
      sweptAt = monotonicMs();
      found += (await sweepDueDeliveries(options.deps)).queued;
    }
    return found > 0;
  }

  const idleIntervalMs = Math.max(options.intervalMs, options.idleIntervalMs ?? DEFAULT_IDLE_INTERVAL_MS);
  let running = false;
  let cycling = false;
  let nudged = false;
  let delay = options.intervalMs;
  const later =
    options.schedule ??
    ((poll: () => void, ms: number) => {
      const timeout = setTimeout(poll, ms);
      return () => clearTimeout(timeout);
    });
  let timer: (() => void) | undefined;
  let dueAt = 0;
  let current: Promise<void> = Promise.resolve();
  const schedule = (wait: number) => {
    dueAt = monotonicMs() + wait;
    timer = later(() => {
      timer = undefined;
      cycling = true;
      nudged = false;
      current = cycle()
        .catch((error: unknown) => {
          options.logger.warn('webhook dispatcher cycle failed; trying again', {
            error: error instanceof Error ? `${error.name}: ${error.message}` : 'unknown',
          });
          return false;
        })
        .then((foundWork) => {
          cycling = false;
          delay = foundWork || nudged ? options.intervalMs : Math.min(delay * 2, idleIntervalMs);
          if (running) schedule(delay);
        });
    }, wait);
  };

  const dispatcher = {
    start() {
      if (running) return;
      running = true;
      delay = options.intervalMs;
      schedule(delay);
    },
    nudge(nudgeOptions: { sweep?: boolean } = {}) {
      if (nudgeOptions.sweep) sweepAsked = true;
      delay = options.intervalMs;
      // During a cycle, the next one comes at intervalMs (the write may have missed this one's read).
      if (cycling) nudged = true;
      else if (running && timer && dueAt > monotonicMs() + options.intervalMs) {
        timer();
        schedule(options.intervalMs);
      }
    },
    async stop() {
      running = false;
      timer?.();
      timer = undefined;
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
