import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { newDelivery, type DeliveryKey, type DeliveryRecord } from '../db/webhook-deliveries.js';
import { attemptDelivery, attemptFirst, type DeliveryDeps } from './send.js';

/**
 * Webhook deliveries are isolated per destination: the stream dispatcher and the sweeper only queue
 * attempts, and each is made from the queue, one destination's after another's never. In AWS the
 * queue is an SQS FIFO queue whose message group is the webhook (infra/webhook-delivery.ts): SQS
 * hands a group's messages out one at a time and in order, so a receiver that hangs holds back its
 * own deliveries only, and every other webhook's are sent meanwhile. Locally local/delivery-queue.ts
 * keeps the same per-webhook order in process.
 */

/**
 * What a first attempt's message carries: the delivery itself, which has no record until that
 * attempt's outcome is written (the message, durable in SQS, is the delivery until then).
 */
export type FirstAttempt = Pick<DeliveryRecord, 'clientId' | 'eventType' | 'payload' | 'createdAt'>;

/**
 * One queued attempt: which delivery, and its attempt count when it was queued; a first attempt
 * queued by the dispatcher carries the delivery (`first`), later ones name a record that exists.
 */
export interface DeliveryMessage {
  webhookId: string;
  deliveryId: string;
  attemptCount: number;
  first?: FirstAttempt;
}

/** The port the dispatcher and the sweeper queue attempts through; the adapters group by webhookId. */
export interface DeliveryQueue {
  enqueue(messages: readonly DeliveryMessage[]): Promise<void>;
}

/** What queues attempts: delivery's needs and the queue. */
export type DispatchDeps = DeliveryDeps & { queue: DeliveryQueue };

/**
 * How long a queued retry is left to its message before the sweeper queues it again (its message
 * lost, or still waiting behind a receiver that hangs). A message that arrives after its attempt was
 * made by another is dropped by the attempt's claim.
 */
export const QUEUE_LEASE_MS = 15 * 60_000;

export const messageOf = (delivery: DeliveryKey & { attemptCount: number }): DeliveryMessage => ({
  webhookId: delivery.webhookId,
  deliveryId: delivery.deliveryId,
  attemptCount: delivery.attemptCount,
});

/** SQS FIFO's deduplication id: the same attempt queued twice within five minutes is sent once. */
export const deduplicationIdOf = (message: DeliveryMessage): string =>
  `${message.deliveryId}-${message.attemptCount}`;

/**
 * The consumer's work for one message: the attempt it names. A later attempt is claimed on its
 * attempt count, so a message queued twice, or one whose attempt the manual retry made, sends nothing
 * a second time. A first attempt has no record to claim: SQS hands its message group's messages to
 * one consumer at a time, and a message comes back only once its consumer is gone (the function's
 * timeout is below the queue's visibility timeout), so it is made here alone; a record already there
 * means a copy of the message was handled before (nothing is sent), or that the delivery was written
 * due by the previous release or by the dead-letter path (then it is claimed like a retry).
 */
export async function deliverQueued(
  deps: DeliveryDeps,
  message: DeliveryMessage,
): Promise<DeliveryRecord | null> {
  if (!message.first) return attemptDelivery(deps, message);
  const stored = await deps.deliveries.get(message);
  if (stored)
    return stored.status === 'pending' && stored.attemptCount === message.attemptCount
      ? attemptDelivery(deps, message)
      : null;
  return attemptFirst(deps, deliveryOf(message, message.first));
}

/**
 * A message the queue gave up on (maxReceiveCount receives, none recorded: DynamoDB unreachable, or
 * its consumer dying each time), from the dead-letter queue. A first attempt's delivery exists only
 * in its message: it is written pending and due now, for the sweeper to queue like any retry. A later
 * attempt's record is due already (its claim lease or queue lease runs out), so nothing is needed.
 * Answers whether a record was written.
 */
export async function recordDeadLettered(deps: DeliveryDeps, message: DeliveryMessage): Promise<boolean> {
  if (!message.first) return false;
  const written = await deps.deliveries.create(deliveryOf(message, message.first, deps.clock.now()));
  if (written)
    deps.logger.warn('webhook attempt dead-lettered; its delivery is recorded due', {
      webhookId: message.webhookId,
      deliveryId: message.deliveryId,
    });
  return written;
}

/** The delivery a first attempt's message carries, pending and due at `due` (its creation by default). */
function deliveryOf(message: DeliveryMessage, first: FirstAttempt, due?: Date): DeliveryRecord {
  return newDelivery(
    {
      webhookId: message.webhookId,
      deliveryId: message.deliveryId,
      clientId: first.clientId,
      eventType: first.eventType,
      payload: first.payload,
    },
    new Date(first.createdAt),
    due,
  );
}

const messageSchema = z.object({
  webhookId: z.string(),
  deliveryId: z.string(),
  attemptCount: z.number().int().nonnegative(),
  first: z
    .object({ clientId: z.string(), eventType: z.string(), payload: z.string(), createdAt: z.string() })
    .optional(),
});

function parseMessage(body: string): DeliveryMessage {
  const { first, ...rest } = messageSchema.parse(JSON.parse(body));
  return first ? { ...rest, first } : rest;
}

/**
 * The deliverer's batch (Powertools batch processing). From the delivery queue: each message's
 * attempt; one whose attempt could not be recorded (DynamoDB unreachable) is reported, and SQS gives
 * it again. From the dead-letter queue (`deadLettered`): each message's delivery recorded due.
 */
export async function deliverQueueBatch(
  event: SQSEvent,
  deps: DeliveryDeps,
  deadLettered: (record: SQSRecord) => boolean = () => false,
): Promise<SQSBatchResponse> {
  return processPartialResponse(
    event,
    async (record: SQSRecord) => {
      const message = parseMessage(record.body);
      if (deadLettered(record)) await recordDeadLettered(deps, message);
      else await deliverQueued(deps, message);
    },
    new BatchProcessor(EventType.SQS),
  );
}
