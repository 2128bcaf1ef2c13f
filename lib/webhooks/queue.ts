import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { DeliveryKey, DeliveryRecord } from '../db/webhook-deliveries.js';
import { attemptDelivery, type DeliveryDeps } from './send.js';

/**
 * Webhook deliveries are isolated per destination: the stream dispatcher and the sweeper only queue
 * attempts, and each is made from the queue, one destination's after another's never. In AWS the
 * queue is an SQS FIFO queue whose message group is the webhook (infra/webhook-delivery.ts): SQS
 * hands a group's messages out one at a time and in order, so a receiver that hangs holds back its
 * own deliveries only, and every other webhook's are sent meanwhile. Locally local/delivery-queue.ts
 * keeps the same per-webhook order in process.
 */

/** One queued attempt: which delivery, and its attempt count when it was queued. */
export interface DeliveryMessage {
  webhookId: string;
  deliveryId: string;
  attemptCount: number;
}

/** The port the dispatcher and the sweeper queue attempts through; the adapters group by webhookId. */
export interface DeliveryQueue {
  enqueue(messages: readonly DeliveryMessage[]): Promise<void>;
}

/** What queues attempts: delivery's needs and the queue. */
export type DispatchDeps = DeliveryDeps & { queue: DeliveryQueue };

/**
 * How long a queued delivery is left to its message before the sweeper queues it again (its message
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
 * The consumer's work for one message: the attempt it names, claimed on its attempt count, so a
 * message queued twice, or one whose attempt the manual retry made, sends nothing a second time.
 */
export const deliverQueued = (deps: DeliveryDeps, message: DeliveryMessage): Promise<DeliveryRecord | null> =>
  attemptDelivery(deps, message);

function parseMessage(body: string): DeliveryMessage {
  const parsed = JSON.parse(body) as Partial<DeliveryMessage>;
  if (
    typeof parsed.webhookId !== 'string' ||
    typeof parsed.deliveryId !== 'string' ||
    typeof parsed.attemptCount !== 'number'
  )
    throw new Error('not a delivery message');
  return { webhookId: parsed.webhookId, deliveryId: parsed.deliveryId, attemptCount: parsed.attemptCount };
}

/**
 * The queue's batch (Powertools batch processing): each message's attempt; a message whose attempt
 * could not even be recorded (DynamoDB unreachable) is reported, and SQS gives it again.
 */
export async function deliverQueueBatch(event: SQSEvent, deps: DeliveryDeps): Promise<SQSBatchResponse> {
  return processPartialResponse(
    event,
    async (record: SQSRecord) => {
      await deliverQueued(deps, parseMessage(record.body));
    },
    new BatchProcessor(EventType.SQS),
  );
}
