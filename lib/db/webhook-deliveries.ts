import { createHash } from 'node:crypto';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { epochSeconds } from '../kernel/clock.js';
import { isConditionFailure } from './client.js';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One try: when, how long, and the receiver's HTTP status or why there was none. */
export interface DeliveryAttempt {
  at: string;
  durationMs: number;
  httpStatus?: number;
  /** An error class (`timeout`, `connection`, `url_refused: ...`), never a response body. */
  error?: string;
}

export interface DeliveryRecord {
  webhookId: string;
  /** Also the `webhook-id` header: the same for every attempt (lib/webhooks/events.ts). */
  deliveryId: string;
  /** The client owning the webhook when the delivery was made. */
  clientId: string;
  eventType: string;
  /** The exact body sent on every attempt. */
  payload: string;
  status: DeliveryStatus;
  attemptCount: number;
  /** attemptCount when the current back-off schedule began (a manual retry starts a fresh one). */
  scheduledFrom: number;
  attempts: DeliveryAttempt[];
  /** When the next attempt is due, while pending. */
  nextAttemptAt?: string;
  /**
   * One of DUE_BUCKETS shards (`pending#<n>`, dueBucketOf) while pending and absent otherwise: the
   * sparse by-due index holds only what is owed. `pending` alone on deliveries made before shards.
   */
  dueBucket?: string;
  createdAt: string;
  /** Epoch seconds: 30 days after the last attempt. */
  ttl: number;
  /** Set while an attempt is under way (claimed, not yet recorded): until when it may be. */
  leaseUntil?: string;
}

export type DeliveryKey = Pick<DeliveryRecord, 'webhookId' | 'deliveryId'>;

export interface DeliveryPage {
  deliveries: DeliveryRecord[];
  /** The last key of the page, to continue after; absent on the last page. */
  lastKey?: Record<string, string>;
}

/**
 * The by-due index's partition keys. Under one key, every delivery of the platform (each written,
 * claimed and finished there) goes to one index partition whose sort key is time-ordered, so DynamoDB
 * cannot split it: its 1,000 writes a second cap the platform at about 330 deliveries a second, under
 * one enterprise issuer's allowance (docs/SCALE.md). A delivery keeps its shard for life (it is
 * derived from its id), and the sweeper reads every shard.
 */
export const DUE_BUCKETS = 16;
const LEGACY_DUE_BUCKET = 'pending';

export const dueBucketOf = (deliveryId: string): string =>
  `pending#${(createHash('sha256').update(deliveryId).digest()[0] as number) % DUE_BUCKETS}`;

/** Every bucket the sweeper reads: the shards, and the single bucket of deliveries made before them. */
/** How long a delivery's record is kept, whatever became of it. */
const DELIVERY_RETENTION_SECONDS = 30 * 24 * 3_600;

/**
 * A new delivery, pending: due at once for the sweeper to queue (an announcement, or a first attempt
 * the delivery queue gave up on), or at `queuedUntil`. A stored receipt's delivery is written only
 * with its first attempt's outcome (lib/webhooks/queue.ts).
 */
export const newDelivery = (
  input: Pick<DeliveryRecord, 'webhookId' | 'deliveryId' | 'clientId' | 'eventType' | 'payload'>,
  now: Date,
  queuedUntil?: Date,
): DeliveryRecord => ({
  ...input,
  status: 'pending',
  attemptCount: 0,
  scheduledFrom: 0,
  attempts: [],
  nextAttemptAt: (queuedUntil ?? now).toISOString(),
  dueBucket: dueBucketOf(input.deliveryId),
  createdAt: now.toISOString(),
  ttl: epochSeconds(now) + DELIVERY_RETENTION_SECONDS,
});

export const dueBuckets = (): string[] => [
  ...Array.from({ length: DUE_BUCKETS }, (_, shard) => `pending#${shard}`),
  LEGACY_DUE_BUCKET,
];

export class WebhookDeliveryRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** False when the delivery exists already: a replayed stream record changes nothing. */
  async create(record: DeliveryRecord): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
          ConditionExpression: 'attribute_not_exists(deliveryId)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  async get(key: DeliveryKey): Promise<DeliveryRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
    );
    return (result.Item as DeliveryRecord | undefined) ?? null;
  }

  /** A webhook's deliveries, newest first. */
  async listForWebhook(
    webhookId: string,
    limit: number,
    startKey?: Record<string, string>,
  ): Promise<DeliveryPage> {
    const page = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by-webhook',
        KeyConditionExpression: 'webhookId = :webhook',
        ExpressionAttributeValues: { ':webhook': webhookId },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: startKey,
      }),
    );
    const lastKey = page.LastEvaluatedKey as Record<string, string> | undefined;
    return {
      deliveries: (page.Items as DeliveryRecord[] | undefined) ?? [],
      ...(lastKey ? { lastKey } : {}),
    };
  }

  /** Pending deliveries due at `now`, the longest overdue first, at most `limit`, from every bucket. */
  async due(now: Date, limit: number): Promise<DeliveryRecord[]> {
    const pages = await Promise.all(
      dueBuckets().map((bucket) =>
        this.doc.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: 'by-due',
            KeyConditionExpression: 'dueBucket = :due AND nextAttemptAt <= :now',
            ExpressionAttributeValues: { ':due': bucket, ':now': now.toISOString() },
            Limit: limit,
          }),
        ),
      ),
    );
    return pages
      .flatMap((page) => (page.Items as DeliveryRecord[] | undefined) ?? [])
      .sort((a, b) => ((a.nextAttemptAt ?? '') < (b.nextAttemptAt ?? '') ? -1 : 1))
      .slice(0, limit);
  }

  /**
   * Marks a due delivery queued: due again at `queuedUntil` unless its attempt is made before. Only
   * while it is still pending, at `seenCount` attempts and due at `now`, so two sweeps queue it once.
   */
  async markQueued(key: DeliveryKey, seenCount: number, now: Date, queuedUntil: Date): Promise<boolean> {
    const updated = await this.updateIf({
      Key: keyOf(key),
      UpdateExpression: 'SET nextAttemptAt = :until',
      ConditionExpression: '#status = :pending AND attemptCount = :seen AND nextAttemptAt <= :now',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':pending': 'pending',
        ':seen': seenCount,
        ':now': now.toISOString(),
        ':until': queuedUntil.toISOString(),
      },
    });
    return updated !== null;
  }

  /**
   * Takes the next attempt of a pending delivery whose attempt count is still `seenCount`: only one
   * caller can win, so two sweepers (or a sweeper and a manual retry) never send the same attempt
   * twice. The attempt is due again at `leaseUntil`, so one whose sender died is tried once more.
   * `dueBy` (a sweeper) also requires that it is due.
   */
  async claim(
    key: DeliveryKey,
    seenCount: number,
    leaseUntil: Date,
    dueBy?: Date,
  ): Promise<DeliveryRecord | null> {
    return this.updateIf({
      Key: keyOf(key),
      UpdateExpression: 'SET attemptCount = :next, nextAttemptAt = :lease, leaseUntil = :lease',
      ConditionExpression:
        '#status = :pending AND attemptCount = :seen' + (dueBy ? ' AND nextAttemptAt <= :due' : ''),
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':pending': 'pending',
        ':seen': seenCount,
        ':next': seenCount + 1,
        ':lease': leaseUntil.toISOString(),
        ...(dueBy ? { ':due': dueBy.toISOString() } : {}),
      },
    });
  }

  /**
   * Records the outcome of the claimed attempt number `attemptCount`: pending again with its next
   * time, or finished. Nothing is written when a later claim has taken the delivery since.
   */
  async recordAttempt(
    key: DeliveryKey,
    attemptCount: number,
    attempt: DeliveryAttempt,
    outcome: { status: 'pending'; nextAttemptAt: Date } | { status: 'succeeded' | 'failed' },
    ttl: number,
  ): Promise<DeliveryRecord | null> {
    const pending = outcome.status === 'pending';
    return this.updateIf({
      Key: keyOf(key),
      UpdateExpression: pending
        ? 'SET attempts = list_append(attempts, :attempt), #status = :status, nextAttemptAt = :next, dueBucket = :due, #ttl = :ttl REMOVE leaseUntil'
        : 'SET attempts = list_append(attempts, :attempt), #status = :status, #ttl = :ttl REMOVE nextAttemptAt, dueBucket, leaseUntil',
      ConditionExpression: 'attemptCount = :count',
      ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':attempt': [attempt],
        ':status': outcome.status,
        ':count': attemptCount,
        ':ttl': ttl,
        ...(pending
          ? { ':next': outcome.nextAttemptAt.toISOString(), ':due': dueBucketOf(key.deliveryId) }
          : {}),
      },
    });
  }

  /**
   * A manual retry, claimed at once: pending with a fresh back-off schedule from this attempt, whose
   * attempt the caller makes now (so no sweeper takes it in between). Refused (null) while another
   * attempt is under way.
   */
  async restart(
    key: DeliveryKey,
    seenCount: number,
    now: Date,
    leaseUntil: Date,
  ): Promise<DeliveryRecord | null> {
    return this.updateIf({
      Key: keyOf(key),
      UpdateExpression:
        'SET #status = :pending, scheduledFrom = :seen, attemptCount = :next, nextAttemptAt = :lease, ' +
        'leaseUntil = :lease, dueBucket = :due',
      ConditionExpression:
        'attemptCount = :seen AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':pending': 'pending',
        ':seen': seenCount,
        ':next': seenCount + 1,
        ':now': now.toISOString(),
        ':lease': leaseUntil.toISOString(),
        ':due': dueBucketOf(key.deliveryId),
      },
    });
  }

  /** An update that answers the item as it is after it, or null when its condition does not hold. */
  private async updateIf(
    input: Omit<UpdateCommandInput, 'TableName' | 'ReturnValues'>,
  ): Promise<DeliveryRecord | null> {
    try {
      const result = await this.doc.send(
        new UpdateCommand({ ...input, TableName: this.tableName, ReturnValues: 'ALL_NEW' }),
      );
      return result.Attributes as DeliveryRecord;
    } catch (error) {
      if (isConditionFailure(error)) return null;
      throw error;
    }
  }
}

const keyOf = ({ webhookId, deliveryId }: DeliveryKey): DeliveryKey => ({ webhookId, deliveryId });
